package data

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labelled makes a 1×2×2 image set with balanced labels (and CIFAR-100-style coarse labels
// when classes is 100).
func labelled(name string, n, classes int) *Images {
	x := &Images{Name: name, N: n, C: 1, H: 2, W: 2, Pixels: make([]uint8, n*4), Labels: balancedLabels(n, classes), Classes: classes}
	if classes == 100 {
		x.CoarseClasses = 20
		for _, l := range x.Labels {
			x.Coarse = append(x.Coarse, l/5)
		}
	}
	return x
}

func TestSplitPartitionConventions(t *testing.T) {
	sp := &Split{Train: labelled("train", 5000, 100), Test: labelled("test", 1000, 100)}
	cases := []PartitionConfig{
		{Method: MethodIID, Clients: 10},
		{Method: MethodDirichlet, Clients: 20, Alpha: 0.5},
		{Method: MethodPathological, Clients: 50, ClassesPerClient: 10},
		{Method: MethodPachinko, Clients: 20, Alpha: 0.3},
		{Method: MethodCoarseGroups, Clients: 40},
		{Method: MethodDirichlet, Convention: ConventionFedPerfix, Clients: 16, Alpha: 0.5, MinSize: 20},
		{Method: MethodIID, Clients: 10, HoldOut: 0.2, NoiseMax: 0.5},
	}
	for _, cfg := range cases {
		t.Run(string(cfg.Method)+"/"+string(cfg.Convention), func(t *testing.T) {
			cfg.Seed = 7
			f, err := sp.Partition(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Part.Train) != cfg.Clients || len(f.Part.Test) != cfg.Clients {
				t.Fatalf("%d train and %d test parts for %d clients", len(f.Part.Train), len(f.Part.Test), cfg.Clients)
			}
			used := 0
			for j := range f.Part.Train {
				used += len(f.Part.Train[j])
				for _, i := range f.Part.Train[j] {
					if i >= f.Train.N {
						t.Fatalf("train index %d beyond %d", i, f.Train.N)
					}
				}
				for _, i := range f.Part.Test[j] {
					if i >= f.Test.N {
						t.Fatalf("test index %d beyond %d", i, f.Test.N)
					}
				}
			}
			if cfg.Convention == ConventionFedPerfix {
				if f.Train.N != 6000 || f.Train != f.Test {
					t.Fatalf("fedperfix pool: %d images, shared=%v", f.Train.N, f.Train == f.Test)
				}
				for j := range f.Part.Train { // disjoint train and test per client
					for _, i := range f.Part.Test[j] {
						for _, k := range f.Part.Train[j] {
							if i == k {
								t.Fatalf("client %d: sample %d in train and test", j, i)
							}
						}
					}
				}
			}
			if cfg.HoldOut > 0 && len(f.Part.Novel) != 2 {
				t.Fatalf("novel clients %v", f.Part.Novel)
			}
			if cfg.NoiseMax > 0 && (len(f.Part.Noise) != cfg.Clients || f.Part.Noise[cfg.Clients-1] != cfg.NoiseMax) {
				t.Fatalf("noise %v", f.Part.Noise)
			}
			// the same seed gives the same manifest; another seed another
			g, _ := sp.Partition(cfg)
			if f.Manifest().Hash != g.Manifest().Hash {
				t.Fatal("same seed, different partitions")
			}
			cfg.Seed = 8
			if h, _ := sp.Partition(cfg); h.Manifest().Hash == f.Manifest().Hash {
				t.Fatal("seeds 7 and 8 give the same partition")
			}
		})
	}
}

func TestPartitionErrorsNameTheProblem(t *testing.T) {
	sp := &Split{Train: labelled("train", 1000, 10), Test: labelled("test", 200, 10)}
	for _, c := range []struct {
		cfg  PartitionConfig
		want string
	}{
		{PartitionConfig{Method: MethodDirichlet, Clients: 10, Alpha: 0}, "alpha"},
		{PartitionConfig{Method: MethodPathological, Clients: 10, ClassesPerClient: 11}, "classes"},
		{PartitionConfig{Method: MethodIID, Clients: 2000}, "clients"},
		{PartitionConfig{Method: MethodPachinko, Clients: 10, Alpha: 1}, "coarse"},
		{PartitionConfig{Method: "zipf", Clients: 10}, "zipf"},
		{PartitionConfig{Method: MethodIID, Clients: 0}, "clients"},
		{PartitionConfig{Method: MethodIID, Clients: 10, HoldOut: 1}, "hold-out"},
	} {
		if _, err := sp.Partition(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c.cfg, err, c.want)
		}
	}
}

func TestManifestFiles(t *testing.T) {
	sp := &Split{Train: labelled("train", 2000, 10), Test: labelled("test", 500, 10)}
	f, err := sp.Partition(PartitionConfig{Method: MethodDirichlet, Clients: 12, Alpha: 0.3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := f.Manifest()
	total := 0
	for _, row := range m.TrainCount {
		for _, v := range row {
			total += v
		}
	}
	if total != 2000 || len(m.Hash) != 64 {
		t.Fatalf("manifest counts %d samples, hash %q", total, m.Hash)
	}
	dir := t.TempDir()
	if err := f.WriteManifest(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "partition.json"))
	if err != nil || !bytes.Contains(b, []byte(m.Hash)) {
		t.Fatalf("partition.json: %v", err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "partition.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 1000 {
		t.Fatalf("partition.png: %d bytes, %v", len(png), err)
	}
	if os.Getenv("PFL_KEEP_HEATMAP") != "" {
		os.WriteFile(os.Getenv("PFL_KEEP_HEATMAP"), png, 0o644)
	}
}
