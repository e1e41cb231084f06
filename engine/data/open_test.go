package data

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// mnistDir writes an MNIST-layout folder: train and test images of the given IDX
// dimensions (pixels 0, 1, ...) with the given labels (nil: len dims[0] zeros).
func mnistDir(t *testing.T, trainDims, testDims []int, trainLabels, testLabels []byte) string {
	dir := t.TempDir()
	for _, p := range []struct {
		prefix string
		dims   []int
		labels []byte
	}{{"train", trainDims, trainLabels}, {"t10k", testDims, testLabels}} {
		n := 1
		for _, d := range p.dims {
			n *= d
		}
		if p.labels == nil && len(p.dims) > 0 {
			p.labels = make([]byte, p.dims[0])
		}
		putFile(t, dir, p.prefix+"-images-idx3-ubyte", idxBytes(8, p.dims, seqBytes(n, 0)))
		putFile(t, dir, p.prefix+"-labels-idx1-ubyte", idxBytes(8, []int{len(p.labels)}, p.labels))
	}
	return dir
}

// cifarDir writes a CIFAR-10 folder from cifar10Files, edited.
func cifarDir(t *testing.T, edit func(files map[string][]byte)) string {
	files, _, _ := cifar10Files()
	edit(files)
	dir := t.TempDir()
	for n, b := range files {
		putFile(t, dir, n, b)
	}
	return dir
}

// npzFile writes an .npz of medMNISTMembers, edited.
func npzFile(t *testing.T, edit func(m map[string][]byte)) string {
	m := medMNISTMembers()
	edit(m)
	return putFile(t, t.TempDir(), "organamnist.npz", npzBytes(t, m))
}

// openCase is a dataset written into a temporary folder, opened with Open, and the
// error expected: it must contain every string of want (file names, shapes, ...).
type openCase struct {
	name string
	spec func(t *testing.T) (spec string, want []string)
}

func runOpenCases(t *testing.T, cases []openCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, want := tc.spec(t)
			_, err := Open(spec)
			if err == nil {
				t.Fatalf("Open(%s) succeeded", spec)
			}
			t.Log(err)
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v\nwant one containing %q", err, w)
				}
			}
			if len(err.Error()) > 500 {
				t.Fatalf("a %d-byte message: %.600s", len(err.Error()), err)
			}
		})
	}
}

// TestOpenMessagesAreShort: a header declaring hundreds of dimensions, or a name of
// kilobytes, gives a message of a line that names the file, not a dump of the header.
func TestOpenMessagesAreShort(t *testing.T) {
	long := strings.Repeat("x", 10000)
	runOpenCases(t, []openCase{
		{"IDX images of 255 dimensions", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 2, 2}, []int{1, 2, 2}, nil, nil)
			p := putFile(t, dir, "train-images-idx3-ubyte", idxBytes(8, make([]int, 255), nil))
			return "mnist:" + dir, []string{p, "255 dimensions, want 1 (labels) or 3 (images)"}
		}},
		{"IDX labels of 200 dimensions", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 2, 2}, []int{1, 2, 2}, nil, nil)
			dims := make([]int, 200)
			for i := range dims {
				dims[i] = 1
			}
			p := putFile(t, dir, "t10k-labels-idx1-ubyte", idxBytes(8, dims, []byte{0}))
			return "mnist:" + dir, []string{p, "200 dimensions"}
		}},
		{"IDX images of 4 dimensions", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 2, 2}, []int{1, 2, 2}, nil, nil)
			p := putFile(t, dir, "t10k-images-idx3-ubyte", idxBytes(8, []int{1, 1, 2, 2}, seqBytes(4, 0)))
			return "mnist:" + dir, []string{p, "4 dimensions"}
		}},
		{"IDX images of 1 dimension", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 2, 2}, []int{1, 2, 2}, nil, nil)
			p := putFile(t, dir, "train-images-idx3-ubyte", idxBytes(8, []int{4}, seqBytes(4, 0)))
			return "mnist:" + dir, []string{p, "images have 1 dimensions [4], want 3"}
		}},
		{".npy images of 1000 dimensions", func(t *testing.T) (string, []string) {
			shape := make([]int, 1000)
			for i := range shape {
				shape[i] = 1
			}
			p := npzFile(t, func(m map[string][]byte) { m["test_images.npy"] = npyBytes(1, "|u1", false, shape, []byte{7}) })
			return "organamnist:" + p, []string{p + ":test_images.npy", "(1000 dimensions)"}
		}},
		{".npy header with a long key", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) { m["train_labels.npy"] = rawNpy("{'" + long + "': 1}") })
			return "organamnist:" + p, []string{p + ":train_labels.npy", "unknown key", "(10000 bytes)"}
		}},
		{".npy header with a long descr", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) {
				m["train_labels.npy"] = rawNpy("{'descr': '" + long + "', 'fortran_order': False, 'shape': (3,)}")
			})
			return "organamnist:" + p, []string{p + ":train_labels.npy", "unsupported .npy descr"}
		}},
	})
	// Domains of hundreds of classes each (at 1×1 pixels: Open's are 224×224).
	root := t.TempDir()
	png := pngBytes(t, greyImage(1, 1, 0))
	for i := range 300 {
		putFile(t, root, fmt.Sprintf("a/class%04d/1.png", i), png)
	}
	putFile(t, root, "b/other/1.png", png)
	_, err := LoadDomainFolders("x", root, []string{"a", "b"}, 1)
	if err == nil || !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), `domain "b" has 1 classes, among them "other", domain "a" has 300 classes, among them "class0000"`) || len(err.Error()) > 500 {
		t.Fatalf("domains of other classes: err = %.600v", err)
	}
	// LEAF's user names come from the file too.
	dir := t.TempDir()
	bad := putFile(t, dir, "train/a.json", []byte(`{"users": ["`+long+`"], "num_samples": [1], "user_data": {}}`))
	putFile(t, dir, "test/a.json", leafJSON(t, []string{"A"}, map[string]leafUser{"A": {[]string{"abc"}, []string{"d"}}}))
	_, err = OpenText("shakespeare:"+dir, 0)
	if err == nil || !strings.Contains(err.Error(), bad) || len(err.Error()) > 500 {
		t.Fatalf("long LEAF user name: err = %.600v", err)
	}
}

// TestOpenNoSamples: a file (or folder) holding no images is an error naming it.
func TestOpenNoSamples(t *testing.T) {
	runOpenCases(t, []openCase{
		{"IDX train images", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{0, 28, 28}, []int{2, 28, 28}, nil, nil)
			return "mnist:" + dir, []string{filepath.Join(dir, "train-images-idx3-ubyte"), "no images"}
		}},
		{"IDX test images", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 28, 28}, []int{0, 28, 28}, nil, nil)
			return "mnist:" + dir, []string{filepath.Join(dir, "t10k-images-idx3-ubyte"), "no images"}
		}},
		{"IDX images of zero width", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 28, 0}, []int{2, 28, 28}, nil, nil)
			return "mnist:" + dir, []string{filepath.Join(dir, "train-images-idx3-ubyte"), "28×0 pixels"}
		}},
		{"CIFAR test batch", func(t *testing.T) (string, []string) {
			dir := cifarDir(t, func(f map[string][]byte) { f["test_batch.bin"] = nil })
			return "cifar10:" + dir, []string{filepath.Join(dir, "test_batch.bin"), "empty"}
		}},
		{"CIFAR train batch in an archive", func(t *testing.T) (string, []string) {
			files, _, _ := cifar10Files()
			files["data_batch_3.bin"] = nil
			p := cifarLayouts(t, "cifar-10-batches-bin", files)["archive"]
			return "cifar10:" + p, []string{p + ":data_batch_3.bin", "empty"}
		}},
		{"npz train images", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) {
				m["train_images.npy"] = npyBytes(1, "|u1", false, []int{0, 28, 28}, nil)
				m["train_labels.npy"] = npyBytes(1, "<i8", false, []int{0, 1}, nil)
			})
			return "organamnist:" + p, []string{p + ":train_images.npy", "no images"}
		}},
		{"npz test images", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) {
				m["test_images.npy"] = npyBytes(1, "|u1", false, []int{0, 2, 3}, nil)
				m["test_labels.npy"] = npyBytes(1, "<i8", false, []int{0}, nil)
			})
			return "organamnist:" + p, []string{p + ":test_images.npy", "no images"}
		}},
		{"image folder of empty class folders", func(t *testing.T) (string, []string) {
			root := t.TempDir()
			putFile(t, root, "Art/cat/notes.txt", []byte("not an image"))
			putFile(t, root, "Art/dog/.hidden.png", pngBytes(t, greyImage(1, 1, 0)))
			return "domains:" + root, []string{filepath.Join(root, "Art"), "no images"}
		}},
		{"one domain without images", func(t *testing.T) (string, []string) {
			root := domainTree(t, "Art/cat/1.png", "Art/dog/1.png")
			putFile(t, root, "Clipart/cat/readme.md", nil)
			putFile(t, root, "Clipart/dog/readme.md", nil)
			return "domains:" + root, []string{filepath.Join(root, "Clipart"), "no images"}
		}},
	})
	root := t.TempDir()
	putFile(t, root, "cat/a.txt", nil)
	if _, err := LoadImageFolder("x", root, 2); err == nil || !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "no images") {
		t.Fatalf("LoadImageFolder: err = %v", err)
	}
	dir := t.TempDir()
	empty := leafJSON(t, []string{"A"}, map[string]leafUser{"A": {}})
	train, test := putFile(t, dir, "train/a.json", empty), putFile(t, dir, "test/a.json", empty)
	if _, err := OpenText("shakespeare:"+dir, 0); err == nil || !strings.Contains(err.Error(), train) || !strings.Contains(err.Error(), test) {
		t.Fatalf("LEAF without samples: err = %v", err)
	}
}

// TestOpenGeometryMismatch: train and test files of different image shapes are an error
// when the dataset is opened, naming both files and both shapes.
func TestOpenGeometryMismatch(t *testing.T) {
	grey := func(n, h, w int) []byte { return npyBytes(1, "|u1", false, []int{n, h, w}, seqBytes(n*h*w, 0)) }
	runOpenCases(t, []openCase{
		{"IDX 28×28 and 32×32", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{3, 28, 28}, []int{2, 32, 32}, nil, nil)
			return "mnist:" + dir, []string{filepath.Join(dir, "train-images-idx3-ubyte"), filepath.Join(dir, "t10k-images-idx3-ubyte"),
				"1×28×28", "1×32×32", "image shape"}
		}},
		{"IDX 28×28 and 28×32", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{3, 28, 28}, []int{2, 28, 32}, nil, nil)
			return "mnist:" + dir, []string{"train-images-idx3-ubyte", "t10k-images-idx3-ubyte", "1×28×28", "1×28×32"}
		}},
		{"npz grey train, colour test", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) {
				m["test_images.npy"] = npyBytes(1, "|u1", false, []int{2, 2, 3, 3}, seqBytes(36, 0))
			})
			return "organamnist:" + p, []string{p + ":train_images.npy", p + ":test_images.npy", "1×2×3", "3×2×3"}
		}},
		{"npz 28×28 and 32×32", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) {
				delete(m, "val_images.npy")
				delete(m, "val_labels.npy")
				m["train_images.npy"] = grey(3, 28, 28)
				m["test_images.npy"] = grey(2, 32, 32)
			})
			return "organamnist:" + p, []string{p + ":train_images.npy", p + ":test_images.npy", "1×28×28", "1×32×32"}
		}},
		{"npz val and train", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) { m["val_images.npy"] = grey(1, 3, 2) })
			return "organamnist:" + p, []string{p, "val images are 1×3×2, train images 1×2×3"}
		}},
	})
	// Split.Validate checks what the loaders cannot get wrong too.
	part := func(name, source string, classes int) *Images {
		return &Images{Name: name, Source: source, N: 1, C: 1, H: 1, W: 1, Pixels: []uint8{0}, Labels: []int64{0}, Classes: classes}
	}
	for _, tc := range []struct {
		name        string
		train, test *Images
		want        []string
	}{
		{"classes", part("a/train", "a.bin", 10), part("a/test", "b.bin", 11), []string{"a.bin", "b.bin", "10 classes", "11 classes"}},
		{"channels", part("a/train", "a.bin", 10), &Images{Name: "a/test", Source: "b.bin", N: 1, C: 3, H: 1, W: 1, Pixels: []uint8{0, 0, 0}, Labels: []int64{0}, Classes: 10},
			[]string{"a.bin", "b.bin", "1×1×1", "3×1×1"}},
		{"coarse labels", part("a/train", "a.bin", 10), func() *Images {
			x := part("a/test", "b.bin", 10)
			x.Coarse, x.CoarseClasses = []int64{0}, 2
			return x
		}(), []string{"a.bin", "b.bin", "coarse"}},
		{"no train images", &Images{Name: "a/train", Source: "a.bin", C: 1, H: 1, W: 1, Classes: 10}, part("a/test", "b.bin", 10), []string{"a.bin", "no images"}},
		{"label out of range", part("a/train", "a.bin", 10), func() *Images {
			x := part("a/test", "b.bin", 10)
			x.Labels[0] = 10
			return x
		}(), []string{"b.bin", "label 10"}},
	} {
		err := (&Split{Train: tc.train, Test: tc.test}).Validate()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want one containing %q", tc.name, err, w)
			}
		}
	}
}

// TestOpenLabelErrors: labels out of range, and label counts that do not match the
// images, are errors when the dataset is opened, naming the file.
func TestOpenLabelErrors(t *testing.T) {
	runOpenCases(t, []openCase{
		{"IDX test label out of range", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{2, 2, 2}, []int{3, 2, 2}, []byte{0, 9}, []byte{0, 10, 1})
			return "mnist:" + dir, []string{filepath.Join(dir, "t10k-labels-idx1-ubyte"), "label 10 of record 1 is outside [0, 10)"}
		}},
		{"IDX fewer labels than images", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{4, 2, 2}, []int{1, 2, 2}, []byte{1, 2, 3}, nil)
			return "mnist:" + dir, []string{filepath.Join(dir, "train-images-idx3-ubyte"), filepath.Join(dir, "train-labels-idx1-ubyte"),
				"4 images", "3 labels"}
		}},
		{"IDX more test labels than images", func(t *testing.T) (string, []string) {
			dir := mnistDir(t, []int{1, 2, 2}, []int{1, 2, 2}, nil, []byte{1, 2})
			return "mnist:" + dir, []string{filepath.Join(dir, "t10k-labels-idx1-ubyte"), "1 images", "2 labels"}
		}},
		{"CIFAR-10 test label out of range", func(t *testing.T) (string, []string) {
			dir := cifarDir(t, func(f map[string][]byte) { f["test_batch.bin"][3073] = 200 })
			return "cifar10:" + dir, []string{filepath.Join(dir, "test_batch.bin"), "record 1 has label 200"}
		}},
		{"CIFAR-100 coarse label out of range", func(t *testing.T) (string, []string) {
			files, _, _ := cifar100Files()
			files["test.bin"][0] = 20
			p := cifarLayouts(t, "cifar-100-binary", files)["archive"]
			return "cifar100:" + p, []string{p + ":test.bin", "record 0 has coarse label 20"}
		}},
		{"npz negative test label", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) { m["test_labels.npy"] = npyBytes(1, "<i8", false, []int{2}, leInt64s(1, -3)) })
			return "organamnist:" + p, []string{p + ":test_labels.npy", "label -3 of sample 1"}
		}},
		{"npz train label 11 of 11 classes", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) {
				m["train_labels.npy"] = npyBytes(1, "|u1", false, []int{3}, []byte{0, 11, 1})
			})
			return "organamnist:" + p, []string{p + ":train_labels.npy", "label 11 of sample 1"}
		}},
		{"npz fewer test labels than images", func(t *testing.T) (string, []string) {
			p := npzFile(t, func(m map[string][]byte) { m["test_labels.npy"] = npyBytes(1, "<i8", false, []int{1}, leInt64s(1)) })
			return "organamnist:" + p, []string{p + ":test_labels.npy", "1 labels for the 2 images"}
		}},
	})
}

// sparseTar returns a tar archive holding one GNU sparse (PAX 1.0) member of the given
// real size, all holes: a few blocks that read as size bytes. archive/tar cannot write
// one, so the blocks are made here.
func sparseTar(name string, size int64) []byte {
	header := func(name string, size int, typ byte) []byte {
		b := make([]byte, 512)
		copy(b, name)
		copy(b[100:], "0000644\x00")
		copy(b[124:], fmt.Sprintf("%011o\x00", size))
		b[156] = typ
		copy(b[257:], "ustar\x0000")
		copy(b[148:], "        ")
		sum := 0
		for _, c := range b {
			sum += int(c)
		}
		copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
		return b
	}
	record := func(k, v string) string { // "<len> k=v\n", len counting itself
		n := len(k) + len(v) + 3
		for {
			s := strconv.Itoa(n) + " " + k + "=" + v + "\n"
			if len(s) == n {
				return s
			}
			n = len(s)
		}
	}
	pad := func(b []byte) []byte { return append(b, make([]byte, -len(b)&511)...) }
	pax := record("GNU.sparse.major", "1") + record("GNU.sparse.minor", "0") +
		record("GNU.sparse.name", name) + record("GNU.sparse.realsize", strconv.FormatInt(size, 10))
	var b []byte
	b = append(b, header("PaxHeaders/0", len(pax), tar.TypeXHeader)...)
	b = append(b, pad([]byte(pax))...)
	b = append(b, header("GNUSparseFile.0/"+filepath.Base(name), 512, tar.TypeReg)...)
	b = append(b, pad([]byte("0\n"))...) // a sparse map of no data
	return append(b, make([]byte, 1024)...)
}

// TestArchiveBombs: archive members that declare (or expand to) far more than their
// bytes are errors naming the member, before their data is read.
func TestArchiveBombs(t *testing.T) {
	dir := t.TempDir()
	// A member that deflates a few bytes but declares 1 TiB, and its header to match.
	bomb := putFile(t, dir, "bomb.npz", zipBomb(t, 1<<40))
	// A member whose .npy header declares more than the member holds.
	m := medMNISTMembers()
	m["train_images.npy"] = npyBytes(1, "|u1", false, []int{3000, 2, 3}, seqBytes(18, 0))
	short := putFile(t, dir, "short.npz", npzBytes(t, m))
	// A member that holds a byte more than it declares (and its header says).
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	good := medMNISTMembers()
	for _, n := range npzMemberNames {
		b := good[n]
		w, err := zw.CreateRaw(&zip.FileHeader{Name: n, Method: zip.Store, CompressedSize64: uint64(len(b) + 1), UncompressedSize64: uint64(len(b))})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(append(b, 0))
	}
	zw.Close()
	lying := putFile(t, dir, "lying.npz", buf.Bytes())
	// A sparse tar member of 1 GiB from a few blocks.
	sparse := putFile(t, dir, "sparse.tar.gz", gzipBytes(sparseTar("cifar-10-batches-bin/data_batch_1.bin", 1<<30)))
	// A tar member declaring 2 GiB.
	buf.Reset()
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "cifar-100-binary/train.bin", Size: 1 << 31, Typeflag: tar.TypeReg, Mode: 0o644})
	huge := putFile(t, dir, "huge.tar.gz", gzipBytes(buf.Bytes()))
	// A PNG declaring 4000×4000 pixels in 70 bytes.
	png := putFile(t, dir, "img/d/c/big.png", hugePNG(t, 4000, 4000))
	for _, tc := range []struct {
		spec, want string
	}{
		{"organamnist:" + bomb, bomb + ":train_images.npy: member declares 1099511627776 bytes from"},
		{"organamnist:" + short, short + ":train_images.npy: member holds"},
		{"organamnist:" + lying, lying + ":train_images.npy: corrupt archive member"},
		{"cifar10:" + sparse, sparse + ":data_batch_1.bin: sparse archive member"},
		{"cifar100:" + huge, huge + ":train.bin: member declares 2147483648 bytes"},
		{"domains:" + filepath.Join(dir, "img"), png + ": image declares 4000×4000 pixels in a file of"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Open(tc.spec)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.spec, err, tc.want)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
			t.Errorf("%s: allocated %d MiB", tc.spec, a>>20)
		}
	}
	// The sparse member does read as 1 GiB when not refused.
	tr := tar.NewReader(bytes.NewReader(sparseTar("x", 1<<30)))
	if h, err := tr.Next(); err != nil || h.Size != 1<<30 {
		t.Fatalf("sparse member: %v, %v", h, err)
	}
}

// TestOpenTextPatternCharacters: a folder whose name holds glob pattern characters is
// still read as LEAF's layout.
func TestOpenTextPatternCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shakespeare[leaf]*")
	ok := leafJSON(t, []string{"A"}, map[string]leafUser{"A": {[]string{"abc"}, []string{"d"}}})
	putFile(t, dir, "train/a.json", ok)
	putFile(t, dir, "test/b.json", ok)
	putFile(t, dir, "test/notes.txt", []byte("not LEAF"))
	txt, err := OpenText("shakespeare:"+dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(txt.Clients) != 1 || txt.Clients[0].Train.Len != 3 {
		t.Fatalf("%d clients", len(txt.Clients))
	}
}
