package safetensors

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// file builds a safetensors file by hand: length prefix, header text verbatim, data.
func file(header string, data []byte) []byte {
	return append(withLen(uint64(len(header)), header), data...)
}

// withLen builds a file whose length prefix is n regardless of the header's real length.
func withLen(n uint64, rest string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, n)
	return append(b, rest...)
}

func sampleTensors(t testing.TB) ([]Tensor, map[string]string) {
	w, err := FromFloat32("blocks.0.attn.qkv.weight", []int64{2, 3}, []float32{1, -2, 3.5, 0, float32(math.Inf(1)), 1e-30})
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromFloat64("head.bias", []int64{3}, []float64{math.Pi, -1, 1e300})
	if err != nil {
		t.Fatal(err)
	}
	i64 := binary.LittleEndian.AppendUint64(nil, math.MaxUint64) // -1
	i64 = binary.LittleEndian.AppendUint64(i64, 7)
	tensors := []Tensor{
		w,
		{Name: "bf", DType: BF16, Shape: []int64{2}, Data: []byte{0x80, 0x3f, 0x20, 0xc0}},
		d,
		{Name: "idx", DType: I64, Shape: []int64{2}, Data: i64},
		{Name: "mask", DType: U8, Shape: []int64{5}, Data: []byte{0, 1, 2, 254, 255}},
		{Name: "flag", DType: Bool, Shape: []int64{1}, Data: []byte{1}},
		{Name: "step", DType: F32, Shape: nil, Data: []byte{0, 0, 0x80, 0x3f}}, // 0-d scalar
		{Name: "empty", DType: F32, Shape: []int64{2, 0, 3}},
	}
	return tensors, map[string]string{"format": "pt", "note": "a<b & \"c\""}
}

func sameTensors(t testing.TB, got, want []Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tensors, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("tensor %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	tensors, meta := sampleTensors(t)
	var buf bytes.Buffer
	if err := Write(&buf, tensors, meta); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()

	n := binary.LittleEndian.Uint64(b)
	if n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	header := b[8 : 8+n]
	if trimmed := bytes.TrimRight(header, " "); !bytes.HasSuffix(trimmed, []byte("}")) || len(header)-len(trimmed) >= 8 {
		t.Errorf("header is not a JSON object padded with fewer than 8 spaces: %q", header)
	}
	total := 0
	for _, x := range tensors {
		total += len(x.Data)
	}
	if uint64(len(b)) != 8+n+uint64(total) {
		t.Errorf("file is %d bytes, want 8 + %d header + %d data", len(b), n, total)
	}
	if first := tensors[0].Data; !bytes.Equal(b[8+n:8+n+uint64(len(first))], first) {
		t.Error("data section does not begin right after the header")
	}
	fields, err := headerFields(header)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range fields {
		keys = append(keys, f.key)
	}
	if !sort.StringsAreSorted(keys) || keys[0] != "__metadata__" {
		t.Errorf("header keys not sorted: %v", keys)
	}

	f, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(tensors)
	want[6].Shape = []int64{} // a scalar reads back with an empty, non-nil shape
	sameTensors(t, f.Tensors, want)
	if !maps.Equal(f.Metadata, meta) {
		t.Errorf("metadata %v, want %v", f.Metadata, meta)
	}
	if x, ok := f.Get("head.bias"); !ok || x.DType != F64 {
		t.Errorf("Get(head.bias) = %+v, %v", x, ok)
	}
	if _, ok := f.Get("missing"); ok {
		t.Error("Get(missing) found a tensor")
	}
}

// TestHandBuilt reads a file laid out the way the Python library writes it (compact JSON,
// space padding, header order unrelated to data order), independent of our writer.
func TestHandBuilt(t *testing.T) {
	header := `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},` +
		`"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"n":{"dtype":"I64","shape":[],"data_offsets":[12,20]}}`
	header += strings.Repeat(" ", (8-len(header)%8)%8)
	data := []byte{
		0x80, 0x3f, 0x20, 0xc0, // b: bf16 1.0, -2.5
		0, 0, 0, 0x3f, 0, 0, 0x80, 0xbf, // a: f32 0.5, -1
		3, 0, 0, 0, 0, 0, 0, 0, // n: i64 3
	}
	f, err := Read(bytes.NewReader(file(header, data)))
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, f.Tensors, []Tensor{
		{Name: "b", DType: BF16, Shape: []int64{2}, Data: data[0:4]},
		{Name: "a", DType: F32, Shape: []int64{2}, Data: data[4:12]},
		{Name: "n", DType: I64, Shape: []int64{}, Data: data[12:20]},
	})
	if !maps.Equal(f.Metadata, map[string]string{"format": "pt"}) {
		t.Errorf("metadata %v", f.Metadata)
	}
	for name, want := range map[string][]float32{"a": {0.5, -1}, "b": {1, -2.5}} {
		x, _ := f.Get(name)
		got, err := x.Float32s()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s.Float32s() = %v, %v; want %v", name, got, err, want)
		}
	}
	// Appending to one tensor's data must not overwrite the next one's.
	_ = append(f.Tensors[0].Data, 9)
	if f.Tensors[1].Data[0] != 0 {
		t.Error("tensor data slices share capacity")
	}
}

func TestReadCorrupt(t *testing.T) {
	const ok = `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	two := func(a, b string) string {
		return `{"a":{"dtype":"F32","shape":[2],"data_offsets":` + a + `},"b":{"dtype":"F32","shape":[2],"data_offsets":` + b + `}}`
	}
	d8, d12, d20 := make([]byte, 8), make([]byte, 12), make([]byte, 20)
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "shorter than"},
		{"7 bytes", make([]byte, 7), "shorter than"},
		{"header past end", withLen(100, "{}"), "header size 100 is larger"},
		{"header over limit", withLen(200<<20, "{}"), "header size"},
		{"header size max uint64", withLen(math.MaxUint64, "{}"), "header size"},
		{"invalid JSON", file(`{"a":`, nil), "header is not valid JSON"},
		{"empty header", file("", nil), "header is not valid JSON"},
		{"trailing garbage", file(`{} x`, nil), "header is not valid JSON"},
		{"array header", file(`[1,2]`, nil), "header is not a JSON object"},
		{"null header", file(`null`, nil), "header is not a JSON object"},
		{"invalid UTF-8", file("{\"\xff\":1}", nil), "UTF-8"},
		{"duplicate name", file(strings.Replace(two("[0,8]", "[8,16]"), `"b"`, `"a"`, 1), make([]byte, 16)), "duplicate"},
		{"empty name", file(`{"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, d8), "empty name"},
		{"entry not object", file(`{"a":5}`, nil), `tensor "a"`},
		{"missing dtype", file(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, d8), "dtype"},
		{"missing offsets", file(`{"a":{"dtype":"F32","shape":[2]}}`, d8), "data_offsets"},
		{"unknown dtype", file(`{"a":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}}`, d8), "unknown dtype"},
		{"negative dimension", file(`{"a":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}}`, d8), "negative"},
		{"fractional dimension", file(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}}`, d8), "shape"},
		{"null shape", file(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,8]}}`, d8), "shape"},
		{"shape overflow", file(`{"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}}`, d8), "shape"},
		{"one offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}}`, d8), "data_offsets"},
		{"three offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}`, d8), "data_offsets"},
		{"string offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}}`, d8), "data_offsets"},
		{"negative offset", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[-8,-8]}}`, d8), "data_offsets"},
		{"begin after end", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, d8), "begin after end"},
		{"end beyond data", file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, d8), "end beyond"},
		{"size mismatch", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, d8), "needs 12"},
		{"overlap", file(two("[0,8]", "[4,12]"), d12), "overlaps"},
		{"same offsets", file(two("[0,8]", "[0,8]"), d8), "overlaps"},
		{"gap between", file(two("[0,8]", "[12,20]"), d20), "gap"},
		{"gap at start", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, d12), "gap"},
		{"uncovered tail", file(ok, d12), "not covered"},
		{"data without tensors", file(`{}`, d8), "not covered"},
		{"metadata not strings", file(`{"__metadata__":{"k":1}}`, nil), "__metadata__"},
		{"metadata not object", file(`{"__metadata__":[]}`, nil), "__metadata__"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.file))
			if err == nil {
				t.Fatalf("Read accepted %q", tc.file)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			// OpenFile checks the same layout from the header alone
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFile(path)
			if err == nil {
				f.Close()
				t.Fatalf("OpenFile accepted %q", tc.file)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenFile error %q does not mention %q and the path", err, tc.want)
			}
		})
	}
}

func TestReadFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := os.WriteFile(path, withLen(1<<40, "{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "header size") {
		t.Errorf("ReadFile error %v does not name %s and the problem", err, path)
	}
	if _, err := ReadFile(path + ".missing"); err == nil || !strings.Contains(err.Error(), ".missing") {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

func TestWriteRejects(t *testing.T) {
	good := Tensor{Name: "a", DType: F32, Shape: []int64{1}, Data: make([]byte, 4)}
	with := func(edit func(*Tensor)) Tensor { x := good; edit(&x); return x }
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    string
	}{
		{"empty name", []Tensor{with(func(x *Tensor) { x.Name = "" })}, nil, "empty name"},
		{"duplicate name", []Tensor{good, good}, nil, "duplicate"},
		{"reserved name", []Tensor{with(func(x *Tensor) { x.Name = "__metadata__" })}, nil, "reserved"},
		{"invalid UTF-8 name", []Tensor{with(func(x *Tensor) { x.Name = "\xff" })}, nil, "UTF-8"},
		{"unknown dtype", []Tensor{with(func(x *Tensor) { x.DType = "F7" })}, nil, "unknown dtype"},
		{"short data", []Tensor{with(func(x *Tensor) { x.Data = x.Data[:3] })}, nil, "needs 4"},
		{"negative dimension", []Tensor{with(func(x *Tensor) { x.Shape = []int64{-1} })}, nil, "negative"},
		{"invalid UTF-8 metadata", []Tensor{good}, map[string]string{"k": "\xff"}, "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tc.tensors, tc.meta)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write error %v, want one mentioning %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "client3.safetensors")
	bad := []Tensor{{Name: "w", DType: F32, Shape: []int64{2}, Data: make([]byte, 4)}}
	if err := WriteFile(path, bad, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("WriteFile of an invalid tensor: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("WriteFile left %v behind", left)
	}

	tensors, meta := sampleTensors(t)
	if err := WriteFile(path, tensors, meta); err != nil {
		t.Fatal(err)
	}
	// A failed rewrite must leave the previous file intact and no temporary behind.
	if err := WriteFile(path, bad, nil); err == nil {
		t.Fatal("WriteFile accepted an invalid tensor")
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("directory holds %v, want only the first file", left)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(tensors) || !maps.Equal(f.Metadata, meta) {
		t.Errorf("read back %d tensors and %v", len(f.Tensors), f.Metadata)
	}
}

func TestConversions(t *testing.T) {
	tests := []struct {
		dtype DType
		bits  uint16
		want  float64
	}{
		{BF16, 0x3F80, 1},
		{BF16, 0xC020, -2.5},
		{BF16, 0x3A83, 0.00099945068359375},
		{BF16, 0x0001, 9.183549615799121e-41}, // float32 subnormal
		{BF16, 0xFF80, math.Inf(-1)},
		{F16, 0x3C00, 1},
		{F16, 0xC000, -2},
		{F16, 0x7BFF, 65504},
		{F16, 0x0001, 5.960464477539063e-08}, // smallest subnormal
		{F16, 0x03FF, 6.097555160522461e-05}, // largest subnormal
		{F16, 0x0400, 6.103515625e-05},       // smallest normal
		{F16, 0x3555, 0.333251953125},
		{F16, 0x8001, -5.960464477539063e-08},
		{F16, 0x0000, 0},
		{F16, 0x8000, math.Copysign(0, -1)},
		{F16, 0x7C00, math.Inf(1)},
		{F16, 0xFC00, math.Inf(-1)},
		{F16, 0x7E00, math.NaN()},
		{F16, 0x7C01, math.NaN()},
	}
	for _, tc := range tests {
		x := Tensor{Name: "x", DType: tc.dtype, Shape: []int64{}, Data: binary.LittleEndian.AppendUint16(nil, tc.bits)}
		f32, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		f64, err := x.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []float64{float64(f32[0]), f64[0]} {
			same := got == tc.want && math.Signbit(got) == math.Signbit(tc.want) ||
				math.IsNaN(got) && math.IsNaN(tc.want)
			if !same {
				t.Errorf("%s %#04x = %v, want %v", tc.dtype, tc.bits, got, tc.want)
			}
		}
	}

	v32 := []float32{1.5, -3, 1e-40}
	x, err := FromFloat32("x", []int64{3}, v32)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Float32s(); !slices.Equal(got, v32) {
		t.Errorf("F32 Float32s = %v", got)
	}
	if got, _ := x.Float64s(); got[2] != float64(v32[2]) {
		t.Errorf("F32 Float64s = %v", got)
	}
	y, err := FromFloat64("y", []int64{1, 2}, []float64{math.Pi, -0.1})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := y.Float64s(); !slices.Equal(got, []float64{math.Pi, -0.1}) {
		t.Errorf("F64 Float64s = %v", got)
	}
	if got, _ := y.Float32s(); !slices.Equal(got, []float32{math.Pi, -0.1}) {
		t.Errorf("F64 Float32s = %v", got)
	}

	for _, bad := range []Tensor{
		{Name: "i", DType: I64, Shape: []int64{1}, Data: make([]byte, 8)},
		{Name: "u", DType: U8, Shape: []int64{1}, Data: make([]byte, 1)},
		{Name: "short", DType: F32, Shape: []int64{2}, Data: make([]byte, 7)},
		{Name: "unknown", DType: "X", Data: make([]byte, 4)},
	} {
		if _, err := bad.Float32s(); err == nil {
			t.Errorf("%s: Float32s accepted", bad.Name)
		}
		if _, err := bad.Float64s(); err == nil {
			t.Errorf("%s: Float64s accepted", bad.Name)
		}
	}
	if _, err := FromFloat32("x", []int64{2, 2}, v32); err == nil {
		t.Error("FromFloat32 accepted 3 values for shape [2 2]")
	}
	if _, err := FromFloat64("x", []int64{-1}, nil); err == nil {
		t.Error("FromFloat64 accepted a negative dimension")
	}
}

func TestDTypeSize(t *testing.T) {
	for d, want := range map[DType]int{F32: 4, F64: 8, BF16: 2, F16: 2, I64: 8, I32: 4, U8: 1, Bool: 1, "F7": 0, "": 0} {
		if got := d.Size(); got != want {
			t.Errorf("%q.Size() = %d, want %d", d, got, want)
		}
	}
}

func FuzzRead(f *testing.F) {
	tensors, meta := sampleTensors(f)
	var buf bytes.Buffer
	if err := Write(&buf, tensors, meta); err != nil {
		f.Fatal(err)
	}
	valid := buf.Bytes()
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:20])
	f.Add(file(`{}`, nil))
	f.Add(file(`{"a":{"dtype":"F16","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}`, []byte{7}))
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add(withLen(math.MaxUint64, "{}"))
	f.Add([]byte{1, 2, 3})

	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, got.Tensors, got.Metadata); err != nil {
			t.Fatalf("accepted file does not re-encode: %v", err)
		}
		again, err := Read(&out)
		if err != nil {
			t.Fatalf("re-encoded file does not read: %v", err)
		}
		sameTensors(t, again.Tensors, got.Tensors)
		if !maps.Equal(again.Metadata, got.Metadata) {
			t.Fatalf("metadata %v became %v", got.Metadata, again.Metadata)
		}
	})
}
