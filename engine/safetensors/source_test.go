package safetensors

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestSource: tensors whose data a Source produces write the same bytes as tensors that
// hold it, convert the same, and a Source that fails or returns the wrong length stops
// the write with an error naming the tensor.
func TestSource(t *testing.T) {
	eager, err := FromFloat32("a", []int64{2, 3}, []float32{1, -2, 3.5, 0, 7, 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	lazy := Tensor{Name: "a", DType: F32, Shape: []int64{2, 3}, Source: func() ([]byte, error) {
		calls++
		return append([]byte(nil), eager.Data...), nil
	}}
	var want, got bytes.Buffer
	if err := Write(&want, []Tensor{eager}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&got, []Tensor{lazy}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) || calls != 1 {
		t.Fatalf("lazy write differs (or called %d times)", calls)
	}
	if v, err := lazy.Float32s(); err != nil || v[2] != 3.5 {
		t.Fatalf("Float32s of a lazy tensor: %v %v", v, err)
	}
	if v, err := lazy.Float64s(); err != nil || v[4] != 7 {
		t.Fatalf("Float64s of a lazy tensor: %v %v", v, err)
	}
	for _, c := range []struct {
		name string
		src  func() ([]byte, error)
		want string
	}{
		{"fails", func() ([]byte, error) { return nil, errors.New("device lost") }, "device lost"},
		{"short", func() ([]byte, error) { return make([]byte, 20), nil }, "has 20 data bytes"},
	} {
		bad := Tensor{Name: "bad", DType: F32, Shape: []int64{2, 3}, Source: c.src}
		err := Write(&bytes.Buffer{}, []Tensor{eager, bad}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"bad"`) {
			t.Errorf("%s: error %v, want one naming the tensor and %q", c.name, err, c.want)
		}
	}
}

// TestOpenFile: a file opened lazily gives the same tensors, bytes and metadata as one
// read whole, each tensor's data read when asked; after Close the data cannot be read.
func TestOpenFile(t *testing.T) {
	a, _ := FromFloat32("a", []int64{2, 2}, []float32{1, 2, 3, 4})
	b, _ := FromFloat64("b", []int64{3}, []float64{-1, 0.5, 9})
	empty := Tensor{Name: "c", DType: F32, Shape: []int64{0}, Data: []byte{}}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(path, []Tensor{a, empty, b}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	whole, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lazy.Metadata["k"] != "v" || len(lazy.Tensors) != len(whole.Tensors) {
		t.Fatalf("metadata %v, %d tensors; want k=v and %d", lazy.Metadata, len(lazy.Tensors), len(whole.Tensors))
	}
	for i, w := range whole.Tensors {
		l := lazy.Tensors[i]
		if l.Data != nil || l.Source == nil {
			t.Fatalf("%s: opened with its data in memory", l.Name)
		}
		got, err := l.Bytes()
		if err != nil || l.Name != w.Name || !bytes.Equal(got, w.Data) {
			t.Fatalf("%s: %v %v, want %s %v", l.Name, got, err, w.Name, w.Data)
		}
	}
	if v, err := lazy.Tensors[len(lazy.Tensors)-1].Float64s(); err != nil || v[2] != 9 {
		t.Fatalf("Float64s: %v %v", v, err)
	}
	if err := lazy.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lazy.Tensors[0].Bytes(); err == nil {
		t.Fatal("read a tensor after Close")
	}
}
