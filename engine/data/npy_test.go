package data

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// npyBytes builds a .npy file of format version major.0 the way NumPy does: the header
// dict padded with spaces and a newline to a multiple of 64 bytes.
func npyBytes(major byte, descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	order := map[bool]string{false: "False", true: "True"}[fortran]
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr, order, tuple)
	pre := 10
	if major > 1 {
		pre = 12
	}
	h += strings.Repeat(" ", 63-(pre+len(h))%64) + "\n"
	b := append([]byte("\x93NUMPY"), major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	}
	return append(append(b, h...), data...)
}

// rawNpy builds a version 1.0 .npy file with header h and no data.
func rawNpy(h string) []byte {
	return append(binary.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), uint16(len(h))), h...)
}

// leInt64s encodes vs as <i8 data.
func leInt64s(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func TestReadNpy(t *testing.T) {
	i4 := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 7), uint32(0xfffffffe)) // 7, -2
	f4 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	for _, tc := range []struct {
		name  string
		in    []byte
		shape []int
		ints  []int64 // nil: Int64s must fail
		err   string
	}{
		{"v1 u1", npyBytes(1, "|u1", false, []int{2, 3}, seqBytes(6, 250)), []int{2, 3}, []int64{250, 251, 252, 253, 254, 255}, ""},
		{"v2 i8", npyBytes(2, "<i8", false, []int{3, 1}, leInt64s(5, -1, 1<<40)), []int{3, 1}, []int64{5, -1, 1 << 40}, ""},
		{"v3 b1", npyBytes(3, "|b1", false, []int{3}, []byte{1, 0, 1}), []int{3}, []int64{1, 0, 1}, ""},
		{"v1 i4", npyBytes(1, "<i4", false, []int{2}, i4), []int{2}, []int64{7, -2}, ""},
		{"v1 f4", npyBytes(1, "<f4", false, []int{1}, f4), []int{1}, nil, ""},
		{"scalar f8", npyBytes(1, "<f8", false, nil, leInt64s(0)), []int{}, nil, ""},
		{"empty", npyBytes(1, "|u1", false, []int{0, 28, 28}, nil), []int{0, 28, 28}, []int64{}, ""},
		{"python 2 longs", []byte(strings.Replace(string(npyBytes(1, "|u1", false, []int{2, 1}, []byte{1, 2})), "(2, 1), }", "(2L,1L),}", 1)), []int{2, 1}, []int64{1, 2}, ""},
		{"fortran order", npyBytes(1, "|u1", true, []int{2, 2}, seqBytes(4, 0)), nil, nil, "Fortran order"},
		{"bad magic", append([]byte("\x93NUMPZ"), npyBytes(1, "|u1", false, []int{1}, []byte{1})[6:]...), nil, nil, "bad .npy magic"},
		{"bad version", append([]byte("\x93NUMPY\x04\x00"), npyBytes(1, "|u1", false, []int{1}, []byte{1})[8:]...), nil, nil, "version 4.0"},
		{"big-endian descr", npyBytes(1, ">i8", false, []int{1}, leInt64s(1)), nil, nil, `descr ">i8"`},
		{"truncated data", npyBytes(1, "<i8", false, []int{2}, leInt64s(1, 2)[:12]), nil, nil, "declares more"},
		{"trailing data", npyBytes(2, "|u1", false, []int{2}, []byte{1, 2, 3}), nil, nil, "file holds 3"},
		{"header beyond file", npyBytes(1, "|u1", false, []int{1}, []byte{1})[:40], nil, nil, "truncated .npy header"},
		{"huge shape", npyBytes(1, "<i8", false, []int{1 << 40, 1 << 40}, leInt64s(1)), nil, nil, "declares more"},
		{"short", []byte("\x93NUMPY\x01"), nil, nil, "bad .npy magic"},
		{"not a dict", rawNpy("abc\n"), nil, nil, "not a dict"},
		{"unknown key", rawNpy("{'descr': '|u1', 'x': True}\n"), nil, nil, "unknown key"},
		{"missing shape", rawNpy("{'descr': '|u1', 'fortran_order': False}\n"), nil, nil, "missing"},
		{"repeated key", rawNpy("{'descr': '|u1', 'descr': '|u1'}\n"), nil, nil, "repeated"},
		{"bad tuple", rawNpy("{'descr': '|u1', 'fortran_order': False, 'shape': (2,,)}"), nil, nil, "shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadNpy(bytes.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Shape, tc.shape) {
				t.Fatalf("shape %v, want %v", a.Shape, tc.shape)
			}
			ints, err := a.Int64s()
			if (err == nil) != (tc.ints != nil) || !slices.Equal(ints, tc.ints) {
				t.Fatalf("Int64s = %v, %v; want %v", ints, err, tc.ints)
			}
			if u, err := a.Uint8s(); (err == nil) != (a.Descr == "|u1") || (err == nil && !bytes.Equal(u, a.Data)) {
				t.Fatalf("Uint8s = %v, %v", u, err)
			}
		})
	}
}

// npzBytes builds an .npz (zip) archive of the given members.
func npzBytes(t testing.TB, members map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(members)) {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[n])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// medMNISTMembers returns a tiny grey MedMNIST: train 3, val 1, test 2 images of 2×3.
func medMNISTMembers() map[string][]byte {
	return map[string][]byte{
		"train_images.npy": npyBytes(1, "|u1", false, []int{3, 2, 3}, seqBytes(18, 0)),
		"train_labels.npy": npyBytes(1, "<i8", false, []int{3, 1}, leInt64s(10, 0, 4)),
		"val_images.npy":   npyBytes(1, "|u1", false, []int{1, 2, 3}, seqBytes(6, 18)),
		"val_labels.npy":   npyBytes(1, "<i8", false, []int{1, 1}, leInt64s(7)),
		"test_images.npy":  npyBytes(1, "|u1", false, []int{2, 2, 3}, seqBytes(12, 100)),
		"test_labels.npy":  npyBytes(1, "<i8", false, []int{2}, leInt64s(1, 2)),
	}
}

func TestLoadMedMNIST(t *testing.T) {
	dir := t.TempDir()
	s, err := LoadMedMNIST("organamnist", putFile(t, dir, "organamnist.npz", npzBytes(t, medMNISTMembers())), 11)
	if err != nil {
		t.Fatal(err)
	}
	if x := s.Train; x.Name != "organamnist/train" || x.N != 4 || x.C != 1 || x.H != 2 || x.W != 3 ||
		!bytes.Equal(x.Pixels, seqBytes(24, 0)) || !slices.Equal(x.Labels, []int64{10, 0, 4, 7}) {
		t.Fatalf("train: %s %d×%d×%d×%d labels %v", x.Name, x.N, x.C, x.H, x.W, x.Labels)
	}
	if x := s.Test; x.N != 2 || !bytes.Equal(x.Pixels, seqBytes(12, 100)) || !slices.Equal(x.Labels, []int64{1, 2}) {
		t.Fatalf("test: %d images, labels %v", x.N, x.Labels)
	}

	// Colour images [N, H, W, 3] are transposed to CHW; val is optional.
	hwc := []byte{ // one 1×2 image: pixel (0,0) = 1,2,3; pixel (0,1) = 4,5,6
		1, 2, 3, 4, 5, 6,
	}
	colour := map[string][]byte{
		"train_images.npy": npyBytes(2, "|u1", false, []int{1, 1, 2, 3}, hwc),
		"train_labels.npy": npyBytes(2, "|u1", false, []int{1, 1}, []byte{2}),
		"test_images.npy":  npyBytes(2, "|u1", false, []int{1, 1, 2, 3}, hwc),
		"test_labels.npy":  npyBytes(2, "<i4", false, []int{1}, []byte{0, 0, 0, 0}),
	}
	s, err = LoadMedMNIST("colour", putFile(t, dir, "colour.npz", npzBytes(t, colour)), 3)
	if err != nil {
		t.Fatal(err)
	}
	if x := s.Train; x.C != 3 || x.H != 1 || x.W != 2 || !bytes.Equal(x.Pixels, []byte{1, 4, 2, 5, 3, 6}) || x.Labels[0] != 2 {
		t.Fatalf("colour: %d×%d×%d pixels %v labels %v", x.C, x.H, x.W, x.Pixels, x.Labels)
	}
}

func TestLoadMedMNISTErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(m map[string][]byte)
		member string
		err    string
	}{
		{"label out of range", func(m map[string][]byte) {
			m["test_labels.npy"] = npyBytes(1, "<i8", false, []int{2}, leInt64s(1, 11))
		}, "test_labels.npy", "label 11 of sample 1"},
		{"negative label", func(m map[string][]byte) {
			m["val_labels.npy"] = npyBytes(1, "<i8", false, []int{1, 1}, leInt64s(-1))
		}, "val_labels.npy", "label -1"},
		{"missing member", func(m map[string][]byte) { delete(m, "test_images.npy") }, "test_images.npy", "missing"},
		{"count mismatch", func(m map[string][]byte) {
			m["train_labels.npy"] = npyBytes(1, "<i8", false, []int{2, 1}, leInt64s(1, 2))
		}, "train_labels.npy", "2 labels"},
		{"multi-label", func(m map[string][]byte) {
			m["train_labels.npy"] = npyBytes(1, "<i8", false, []int{3, 2}, leInt64s(1, 2, 3, 4, 5, 6))
		}, "train_labels.npy", "multi-label"},
		{"float labels", func(m map[string][]byte) {
			m["train_labels.npy"] = npyBytes(1, "<f8", false, []int{3}, leInt64s(1, 2, 3))
		}, "train_labels.npy", "as integers"},
		{"int images", func(m map[string][]byte) {
			m["train_images.npy"] = npyBytes(1, "<i8", false, []int{3}, leInt64s(1, 2, 3))
		}, "train_images.npy", "as uint8"},
		{"truncated npy", func(m map[string][]byte) {
			m["test_images.npy"] = m["test_images.npy"][:100]
		}, "test_images.npy", "truncated"},
		{"val geometry", func(m map[string][]byte) {
			m["val_images.npy"] = npyBytes(1, "|u1", false, []int{1, 3, 2}, seqBytes(6, 0))
		}, "", "val images are 1×3×2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := medMNISTMembers()
			tc.edit(m)
			p := putFile(t, t.TempDir(), "x.npz", npzBytes(t, m))
			_, err := LoadMedMNIST("x", p, 11)
			if err == nil || !strings.Contains(err.Error(), p+":"+tc.member) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one naming %s:%s and containing %q", err, p, tc.member, tc.err)
			}
		})
	}
	p := putFile(t, t.TempDir(), "x.npz", []byte("not a zip"))
	if _, err := LoadMedMNIST("x", p, 11); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("not a zip: err = %v", err)
	}
}

func FuzzReadNpy(f *testing.F) {
	f.Add(npyBytes(1, "|u1", false, []int{2, 3}, seqBytes(6, 0)))
	f.Add(npyBytes(2, "<i8", false, []int{2, 1}, leInt64s(1, -1)))
	f.Add(npyBytes(3, "|b1", false, []int{}, []byte{1}))
	f.Add(npyBytes(1, "<f4", true, []int{1}, []byte{0, 0, 0, 0}))
	f.Add(npyBytes(1, "<i4", false, []int{1 << 40, 1 << 40}, nil))
	f.Add(npyBytes(1, "|u1", false, []int{2}, nil)[:30])
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ReadNpy(bytes.NewReader(b))
		if err != nil {
			return
		}
		a.Int64s()
		a.Uint8s()
	})
}
