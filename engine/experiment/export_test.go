package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/data"
)

// TestExportPartitionNamesTheRunsImages checks, under both conventions and with subsets
// drawn, that every exported index names a dataset image with the exported label, that no
// image is exported twice, that the manifest's hash is the one a run writes, and that the
// clients.json written is what the call returned.
func TestExportPartitionNamesTheRunsImages(t *testing.T) {
	sp, err := data.Open("synthetic:300")
	if err != nil {
		t.Fatal(err)
	}
	label := func(i int) int64 { // the one index space: train split, then test split
		if i < sp.Train.N {
			return sp.Train.Labels[i]
		}
		return sp.Test.Labels[i-sp.Train.N]
	}
	for _, conv := range []string{"fedtp", "fedperfix"} {
		cfg := filled(config.Config{Seed: 3, Data: config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological",
			ClassesPerClient: 2, Convention: conv, TrainSamples: 200, TestSamples: 40}, Train: config.Train{Participation: 1}})
		dir := t.TempDir()
		e, err := ExportPartition(context.Background(), cfg, dir)
		if err != nil {
			t.Fatalf("%s: %v", conv, err)
		}
		if len(e.Clients) != 5 || e.TrainImages != sp.Train.N || e.TestImages != sp.Test.N {
			t.Fatalf("%s: %d clients of %d+%d images, want 5 of %d+%d", conv, len(e.Clients), e.TrainImages, e.TestImages, sp.Train.N, sp.Test.N)
		}
		seen, total := map[int]bool{}, 0
		for c, cs := range e.Clients {
			for _, part := range []struct {
				idx    []int
				labels []int64
			}{{cs.Train, cs.TrainLabels}, {cs.Test, cs.TestLabels}} {
				if len(part.idx) != len(part.labels) {
					t.Fatalf("%s client %d: %d indices, %d labels", conv, c, len(part.idx), len(part.labels))
				}
				for i, j := range part.idx {
					if j < 0 || j >= e.TrainImages+e.TestImages || label(j) != part.labels[i] {
						t.Fatalf("%s client %d: index %d is not an image labelled %d", conv, c, j, part.labels[i])
					}
					if seen[j] {
						t.Fatalf("%s client %d: image %d exported twice", conv, c, j)
					}
					seen[j] = true
					total++
				}
			}
			// fedtp keeps the splits apart; fedperfix splits each client's share of the pool
			if conv == "fedtp" && (slices.Max(cs.Train) >= e.TrainImages || slices.Min(cs.Test) < e.TrainImages) {
				t.Fatalf("fedtp client %d: a training index in the test split or the reverse", c)
			}
		}
		if total > 240 {
			t.Fatalf("%s: %d images exported from subsets of 200+40", conv, total)
		}
		var back PartitionExport
		b, err := os.ReadFile(filepath.Join(dir, ClientsFile))
		if err != nil || json.Unmarshal(b, &back) != nil || back.Hash != e.Hash || len(back.Clients) != 5 {
			t.Fatalf("%s: %s does not hold the export: %v", conv, ClientsFile, err)
		}
		m, err := os.ReadFile(filepath.Join(dir, "partition.json"))
		if err != nil || !strings.Contains(string(m), e.Hash) {
			t.Fatalf("%s: partition.json lacks the hash %s: %v", conv, e.Hash, err)
		}
	}
}

// TestExportPartitionRefusesSeveralPartitions: seeds, and suite members that change the
// data, make more than one partition, and the export names the key.
func TestExportPartitionRefusesSeveralPartitions(t *testing.T) {
	base := config.Config{Data: config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "iid"}, Train: config.Train{Participation: 1}}
	seeds := base
	seeds.Seeds = []uint64{1, 2}
	member := base
	member.Suite = []string{"fedavg", "b: algorithm.name=fedavg; data.alpha=0.1"}
	for _, c := range []struct {
		cfg  config.Config
		want string
	}{{seeds, "seed"}, {member, "data.alpha"}} {
		if _, err := ExportPartition(context.Background(), filled(c.cfg), t.TempDir()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error naming %s", err, c.want)
		}
	}
}

// TestExportPartitionWithPresentationKeys: a suite member that only pads the images or
// repeats their channel trains on the suite's partition, so the export goes on and writes
// the partition of the suite without that member.
func TestExportPartitionWithPresentationKeys(t *testing.T) {
	base := config.Config{Seed: 4, Data: config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Train: config.Train{Participation: 1}}
	base.Suite = []string{"fedavg"}
	want, err := ExportPartition(context.Background(), filled(base), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	padded := base
	padded.Suite = []string{"fedavg", "fedbn: algorithm.name=fedbn; data.pad_to=40; data.channels=3"}
	got, err := ExportPartition(context.Background(), filled(padded), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != want.Hash || len(got.Clients) != len(want.Clients) {
		t.Fatalf("with a padding member: partition %s of %d clients, without: %s of %d", got.Hash, len(got.Clients), want.Hash, len(want.Clients))
	}
}

// TestExportPartitionOfAOnePointGrid: a swept config narrowed to one value and one seed
// exports the partition its one run trains on (the plain run with that value and seed);
// two values are refused, naming the sweep.
func TestExportPartitionOfAOnePointGrid(t *testing.T) {
	base := config.Config{Data: config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "pathological", ClassesPerClient: 2,
		Alpha: 0.3, MinSize: 5}, Train: config.Train{Participation: 1}}
	plain := base
	plain.Seed, plain.Data.Partition = 2, "dirichlet"
	want, err := ExportPartition(context.Background(), filled(plain), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	grid := base
	grid.Seeds = []uint64{2}
	grid.Sweep = []config.SweepAxis{{Key: "data.partition", Values: []string{"dirichlet"}}}
	got, err := ExportPartition(context.Background(), filled(grid), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != want.Hash {
		t.Fatalf("the one-point grid exported partition %s, its run trains on %s", got.Hash, want.Hash)
	}
	grid.Sweep[0].Values = []string{"dirichlet", "pathological"}
	if _, err := ExportPartition(context.Background(), filled(grid), t.TempDir()); err == nil || !strings.Contains(err.Error(), "sweep") {
		t.Fatalf("two sweep values: got %v, want an error naming the sweep", err)
	}
}
