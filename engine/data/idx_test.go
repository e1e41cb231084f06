package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"pfl/internal/testenv"
)

// idxBytes builds an IDX file of the given type byte, dimensions and data.
func idxBytes(typ byte, dims []int, data []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, data...)
}

// gzipBytes compresses b.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// putFile writes b to dir/name and returns the path.
func putFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// seqBytes returns n bytes 0, 1, 2, ... (mod 256) starting at from.
func seqBytes(n, from int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(from + i)
	}
	return b
}

func TestReadIDX(t *testing.T) {
	good := idxBytes(8, []int{2, 2, 3}, seqBytes(12, 0))
	for _, tc := range []struct {
		name string
		in   []byte
		dims []int
		err  string
	}{
		{"3-D", good, []int{2, 2, 3}, ""},
		{"gzipped", gzipBytes(good), []int{2, 2, 3}, ""},
		{"1-D", idxBytes(8, []int{4}, []byte{1, 2, 3, 4}), []int{4}, ""},
		{"empty", idxBytes(8, []int{0, 28, 28}, nil), []int{0, 28, 28}, ""},
		{"bad magic", append([]byte{1, 0}, good[2:]...), nil, "bad IDX magic"},
		{"float type", idxBytes(0x0d, []int{1}, []byte{0, 0, 0, 0}), nil, "type byte 0x0d"},
		{"short header", good[:2], nil, "truncated IDX header"},
		{"short dims", good[:9], nil, "truncated IDX header"},
		{"no dims", idxBytes(8, nil, nil), nil, "0 dimensions"},
		{"truncated data", good[:len(good)-1], nil, "declare"},
		{"trailing data", append(slices.Clone(good), 7), nil, "file holds 13"},
		{"huge dims", idxBytes(8, []int{1 << 31, 1 << 31, 1 << 31}, seqBytes(10, 0)), nil, "more than 4 GiB"},
		{"truncated gzip", gzipBytes(good)[:20], nil, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dims, data, err := ReadIDX(bytes.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 1
			for _, d := range tc.dims {
				n *= d
			}
			if !slices.Equal(dims, tc.dims) || len(data) != n {
				t.Fatalf("dims %v with %d bytes, want %v", dims, len(data), tc.dims)
			}
			if n == 12 && !bytes.Equal(data, seqBytes(12, 0)) {
				t.Fatalf("data %v", data)
			}
		})
	}
}

// gzipBomb is a gzip stream of prefix then n GiB of zeros, as members of 16 MiB of zeros
// each (a reader takes concatenated members as one stream): a few MB that decompress to n
// GiB, cheap to build.
func gzipBomb(prefix []byte, n int) []byte {
	zeros := gzipBytes(make([]byte, 16<<20))
	b := gzipBytes(prefix)
	for range n * 64 {
		b = append(b, zeros...)
	}
	return b
}

// A gzip bomb is refused after its header or the data its header declares, having
// decompressed no more than that: the memory taken stays far below the bomb's size.
func TestReadIDXBoundsDecompression(t *testing.T) {
	header := idxBytes(8, []int{2, 2, 3}, nil)
	for _, tc := range []struct {
		name string
		in   []byte
		err  string
	}{
		{"4 GiB of zeros", gzipBomb(nil, 4), "type byte 0x00"},
		{"a header then 4 GiB of zeros", gzipBomb(header, 4), "declare 12 data bytes, file holds more than"},
		{"a header declaring 8 GiB", gzipBomb(idxBytes(8, []int{1 << 13, 1 << 10, 1 << 10}, nil), 1), "more than 4 GiB"},
		{"plain, declaring 8 GiB", idxBytes(8, []int{1 << 13, 1 << 10, 1 << 10}, seqBytes(100, 0)), "more than 4 GiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := ReadIDX(bytes.NewReader(tc.in))
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one containing %q", err, tc.err)
			}
			if took := after.TotalAlloc - before.TotalAlloc; took > 64<<20 {
				t.Fatalf("reading it allocated %d MiB; want a bounded read", took>>20)
			}
		})
	}
}

func TestLoadMNISTDir(t *testing.T) {
	dir := t.TempDir()
	// train gzipped, test plain: LoadMNISTDir accepts both.
	putFile(t, dir, "train-images-idx3-ubyte.gz", gzipBytes(idxBytes(8, []int{3, 2, 3}, seqBytes(18, 10))))
	putFile(t, dir, "train-labels-idx1-ubyte.gz", gzipBytes(idxBytes(8, []int{3}, []byte{2, 0, 1})))
	putFile(t, dir, "t10k-images-idx3-ubyte", idxBytes(8, []int{2, 2, 3}, seqBytes(12, 100)))
	putFile(t, dir, "t10k-labels-idx1-ubyte", idxBytes(8, []int{2}, []byte{1, 1}))
	s, err := LoadMNISTDir("toy", dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x      *Images
		name   string
		n      int
		pix    []byte
		labels []int64
	}{
		{s.Train, "toy/train", 3, seqBytes(18, 10), []int64{2, 0, 1}},
		{s.Test, "toy/test", 2, seqBytes(12, 100), []int64{1, 1}},
	} {
		x := c.x
		if x.Name != c.name || x.N != c.n || x.C != 1 || x.H != 2 || x.W != 3 || x.Classes != 3 {
			t.Errorf("%s: got %s %d×%d×%d×%d, %d classes", c.name, x.Name, x.N, x.C, x.H, x.W, x.Classes)
		}
		if !bytes.Equal(x.Pixels, c.pix) || !slices.Equal(x.Labels, c.labels) {
			t.Errorf("%s: pixels %v labels %v", c.name, x.Pixels, x.Labels)
		}
	}
	// FashionMNIST on a folder of the same layout fills the class names.
	if _, err := FashionMNIST(dir); err != nil {
		t.Fatal(err) // labels are < 3 < 10
	}
}

func TestLoadIDXErrors(t *testing.T) {
	images := idxBytes(8, []int{2, 2, 2}, seqBytes(8, 0))
	labels := idxBytes(8, []int{2}, []byte{0, 1})
	for _, tc := range []struct {
		name           string
		images, labels []byte
		bad            string // which file the error must name
		err            string
	}{
		{"label out of range", images, idxBytes(8, []int{2}, []byte{0, 5}), "labels", "label 5 of record 1"},
		{"count mismatch", images, idxBytes(8, []int{3}, []byte{0, 1, 0}), "labels", "3 labels"},
		{"2-D images", idxBytes(8, []int{2, 4}, seqBytes(8, 0)), labels, "images", "want 3"},
		{"2-D labels", images, idxBytes(8, []int{2, 1}, []byte{0, 1}), "labels", "want 1"},
		{"bad magic", append([]byte{0x1f, 0}, images[2:]...), labels, "images", "bad IDX magic"},
		{"truncated images", images[:len(images)-3], labels, "images", "declare"},
		{"truncated gzip labels", images, gzipBytes(labels)[:15], "labels", "gzip"},
		{"zero-height images", idxBytes(8, []int{2, 0, 2}, nil), labels, "images", "bad geometry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ip := putFile(t, dir, "images", tc.images)
			lp := putFile(t, dir, "labels", tc.labels)
			_, err := LoadIDX("toy", ip, lp, 3)
			want := map[string]string{"images": ip, "labels": lp}[tc.bad]
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one naming %s and containing %q", err, want, tc.err)
			}
		})
	}
	_, err := LoadMNISTDir("toy", t.TempDir(), 10)
	if err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte") {
		t.Fatalf("missing files: err = %v", err)
	}
}

func TestFashionMNISTMissing(t *testing.T) {
	_, err := FashionMNIST(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install dataset-fashion-mnist") {
		t.Fatalf("err = %v", err)
	}
}

func TestFashionMNIST(t *testing.T) {
	testenv.RequireData(t, FashionMNISTDir, "apt-get install dataset-fashion-mnist")
	s, err := FashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x        *Images
		n, class int
	}{{s.Train, 60000, 6000}, {s.Test, 10000, 1000}} {
		x := c.x
		if x.N != c.n || x.C != 1 || x.H != 28 || x.W != 28 || x.Classes != 10 || len(x.ClassNames) != 10 {
			t.Fatalf("%s: %d×%d×%d×%d, %d classes", x.Name, x.N, x.C, x.H, x.W, x.Classes)
		}
		count := make([]int, 10)
		for _, l := range x.Labels {
			count[l]++
		}
		for k, n := range count {
			if n != c.class {
				t.Errorf("%s: class %d (%s) has %d images, want %d", x.Name, k, x.ClassNames[k], n, c.class)
			}
		}
	}
}

func FuzzReadIDX(f *testing.F) {
	good := idxBytes(8, []int{2, 2, 3}, seqBytes(12, 0))
	f.Add(good)
	f.Add(gzipBytes(good))
	f.Add(good[:7])
	f.Add(idxBytes(8, []int{1 << 31, 1 << 31}, nil))
	f.Add(idxBytes(0x0d, []int{1}, []byte{1, 2, 3, 4}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		dims, data, err := ReadIDX(bytes.NewReader(b))
		if err != nil {
			return
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		if n != len(data) {
			t.Fatalf("dims %v but %d bytes", dims, len(data))
		}
	})
}
