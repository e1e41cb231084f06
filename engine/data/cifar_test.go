package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cifarBatch builds records with the given label headers (one or two bytes each) and
// pixels 3072·i+j (mod 256) from seed; it returns the file and the expected pixels.
func cifarBatch(headers [][]byte, seed int) (file, pix []byte) {
	for i, h := range headers {
		p := seqBytes(3072, seed+7*i)
		file = append(append(file, h...), p...)
		pix = append(pix, p...)
	}
	return file, pix
}

// tarGz builds a .tar.gz archive of the given members (name → content), in name order.
func tarGz(t testing.TB, members map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b := members[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// cifar10Files returns a tiny CIFAR-10: batch k holds k records (train 15, test 2).
func cifar10Files() (files map[string][]byte, train, test *Images) {
	files = map[string][]byte{"batches.meta.txt": []byte("airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n")}
	train, test = &Images{}, &Images{}
	for k := 1; k <= 6; k++ {
		name, x, n := fmt.Sprintf("data_batch_%d.bin", k), train, k
		if k == 6 {
			name, x, n = "test_batch.bin", test, 2
		}
		var hs [][]byte
		for i := range n {
			l := byte((k + i) % 10)
			hs = append(hs, []byte{l})
			x.Labels = append(x.Labels, int64(l))
		}
		f, pix := cifarBatch(hs, 31*k)
		files[name] = f
		x.Pixels = append(x.Pixels, pix...)
	}
	return files, train, test
}

// cifar100Files returns a tiny CIFAR-100 (train 3, test 2).
func cifar100Files() (files map[string][]byte, train, test *Images) {
	files = map[string][]byte{}
	train, test = &Images{}, &Images{}
	for _, p := range []struct {
		name   string
		x      *Images
		labels [][2]byte
	}{{"train.bin", train, [][2]byte{{19, 99}, {0, 0}, {4, 30}}}, {"test.bin", test, [][2]byte{{7, 55}, {19, 1}}}} {
		var hs [][]byte
		for _, l := range p.labels {
			hs = append(hs, []byte{l[0], l[1]})
			p.x.Coarse = append(p.x.Coarse, int64(l[0]))
			p.x.Labels = append(p.x.Labels, int64(l[1]))
		}
		f, pix := cifarBatch(hs, len(p.name))
		files[p.name] = f
		p.x.Pixels = pix
	}
	var fine, coarse strings.Builder
	for i := range 100 {
		fmt.Fprintf(&fine, "fine%d\n", i)
	}
	for i := range 20 {
		fmt.Fprintf(&coarse, "coarse%d\n", i)
	}
	files["fine_label_names.txt"] = []byte(fine.String())
	files["coarse_label_names.txt"] = []byte(coarse.String())
	return files, train, test
}

// layouts writes files as an extracted folder, as its parent, and as a .tar.gz archive
// (with a stray same-prefix member to ignore), returning the three paths.
func cifarLayouts(t *testing.T, folder string, files map[string][]byte) map[string]string {
	dir := t.TempDir()
	members := map[string][]byte{folder + "/readme.html": []byte("<html>")}
	for n, b := range files {
		putFile(t, dir, filepath.Join("parent", folder, n), b)
		members[folder+"/"+n] = b
	}
	return map[string]string{
		"folder":  filepath.Join(dir, "parent", folder),
		"parent":  filepath.Join(dir, "parent"),
		"archive": putFile(t, dir, folder+".tar.gz", tarGz(t, members)),
	}
}

func checkImages(t *testing.T, got, want *Images, name string, n, classes int) {
	t.Helper()
	if got.Name != name || got.N != n || got.C != 3 || got.H != 32 || got.W != 32 || got.Classes != classes {
		t.Fatalf("%s: got %s %d×%d×%d×%d with %d classes", name, got.Name, got.N, got.C, got.H, got.W, got.Classes)
	}
	if !bytes.Equal(got.Pixels, want.Pixels) || !slices.Equal(got.Labels, want.Labels) || !slices.Equal(got.Coarse, want.Coarse) {
		t.Fatalf("%s: pixels, labels or coarse labels differ: labels %v want %v, coarse %v want %v", name, got.Labels, want.Labels, got.Coarse, want.Coarse)
	}
}

func TestLoadCIFAR(t *testing.T) {
	files10, train10, test10 := cifar10Files()
	files100, train100, test100 := cifar100Files()
	paths10 := cifarLayouts(t, "cifar-10-batches-bin", files10)
	paths100 := cifarLayouts(t, "cifar-100-binary", files100)
	for _, layout := range []string{"folder", "parent", "archive"} {
		t.Run("cifar10/"+layout, func(t *testing.T) {
			s, err := LoadCIFAR10(paths10[layout])
			if err != nil {
				t.Fatal(err)
			}
			checkImages(t, s.Train, train10, "cifar10/train", 15, 10)
			checkImages(t, s.Test, test10, "cifar10/test", 2, 10)
			if s.Train.ClassNames[9] != "truck" || s.Train.Coarse != nil {
				t.Fatalf("class names %v, coarse %v", s.Train.ClassNames, s.Train.Coarse)
			}
		})
		t.Run("cifar100/"+layout, func(t *testing.T) {
			s, err := LoadCIFAR100(paths100[layout])
			if err != nil {
				t.Fatal(err)
			}
			checkImages(t, s.Train, train100, "cifar100/train", 3, 100)
			checkImages(t, s.Test, test100, "cifar100/test", 2, 100)
			if s.Test.CoarseClasses != 20 || s.Test.ClassNames[55] != "fine55" {
				t.Fatalf("%d coarse classes, names %v", s.Test.CoarseClasses, s.Test.ClassNames)
			}
		})
	}
	// Class-name files are optional.
	delete(files10, "batches.meta.txt")
	s, err := LoadCIFAR10(cifarLayouts(t, "cifar-10-batches-bin", files10)["archive"])
	if err != nil || s.Train.ClassNames != nil {
		t.Fatalf("without batches.meta.txt: %v", err)
	}
}

func TestLoadCIFARErrors(t *testing.T) {
	bad := func(edit func(files map[string][]byte)) map[string][]byte {
		files, _, _ := cifar10Files()
		edit(files)
		return files
	}
	bad100 := func(edit func(files map[string][]byte)) map[string][]byte {
		files, _, _ := cifar100Files()
		edit(files)
		return files
	}
	for _, tc := range []struct {
		name   string
		c100   bool
		files  map[string][]byte
		member string // the file the error must name
		err    string
	}{
		{"truncated batch", false, bad(func(f map[string][]byte) { f["data_batch_3.bin"] = f["data_batch_3.bin"][:5000] }), "data_batch_3.bin", "not a multiple of the 3073-byte record"},
		{"label out of range", false, bad(func(f map[string][]byte) { f["data_batch_4.bin"][2*3073] = 10 }), "data_batch_4.bin", "record 2 has label 10"},
		{"missing batch", false, bad(func(f map[string][]byte) { delete(f, "test_batch.bin") }), "test_batch.bin", "missing"},
		{"short class list", false, bad(func(f map[string][]byte) { f["batches.meta.txt"] = []byte("cat\ndog\n") }), "batches.meta.txt", "2 class names"},
		{"cifar100 record size", true, bad100(func(f map[string][]byte) { f["test.bin"] = append(f["test.bin"], 0) }), "test.bin", "3074-byte record"},
		{"fine out of range", true, bad100(func(f map[string][]byte) { f["train.bin"][3074+1] = 100 }), "train.bin", "record 1 has label 100"},
		{"coarse out of range", true, bad100(func(f map[string][]byte) { f["train.bin"][2*3074] = 20 }), "train.bin", "record 2 has coarse label 20"},
	} {
		folder, load := "cifar-10-batches-bin", LoadCIFAR10
		if tc.c100 {
			folder, load = "cifar-100-binary", LoadCIFAR100
		}
		for layout, p := range cifarLayouts(t, folder, tc.files) {
			t.Run(tc.name+"/"+layout, func(t *testing.T) {
				_, err := load(p)
				if err == nil || !strings.Contains(err.Error(), tc.member) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s and containing %q", err, tc.member, tc.err)
				}
			})
		}
	}
	files, _, _ := cifar10Files()
	archive := tarGz(t, map[string][]byte{"cifar-10-batches-bin/data_batch_1.bin": files["data_batch_1.bin"]})
	dir := t.TempDir()
	for name, b := range map[string][]byte{
		"not-gzip.tar.gz":  []byte("plain text"),
		"truncated.tar.gz": archive[:len(archive)/2],
		"missing.tar.gz":   archive,
	} {
		p := putFile(t, dir, name, b)
		if _, err := LoadCIFAR10(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want one naming the archive", name, err)
		}
	}
	if _, err := LoadCIFAR100(filepath.Join(dir, "nowhere")); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("missing path: err = %v", err)
	}
}

// FuzzCIFARRecords parses arbitrary bytes as CIFAR-10 or -100 records, both with real
// 3×32×32 images and with 1×1×2 ones, so that short inputs hold several records.
func FuzzCIFARRecords(f *testing.F) {
	f.Add([]byte{3, 1, 2, 9, 3, 4}, false)        // two 1×1×2 CIFAR-10 records
	f.Add([]byte{19, 99, 1, 2, 0, 5, 6, 7}, true) // two 1×1×2 CIFAR-100 records
	f.Add([]byte{10, 1, 2}, false)                // label out of range
	f.Add([]byte{20, 5, 1, 2}, true)              // coarse label out of range
	f.Add([]byte{1, 2}, true)                     // truncated
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, hundred bool) {
		format := &cifar10Format
		if hundred {
			format = &cifar100Format
		}
		for _, geom := range [][3]int{{3, 32, 32}, {1, 1, 2}} {
			x := &Images{Name: "fuzz", C: geom[0], H: geom[1], W: geom[2], Classes: format.classes, CoarseClasses: format.coarseClasses}
			if err := parseCIFAR("fuzz.bin", b, format, x); err != nil {
				if !strings.Contains(err.Error(), "fuzz.bin") {
					t.Fatalf("error does not name the file: %v", err)
				}
				continue
			}
			if err := x.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
