// Package golden reads the golden files that scripts/golden/gen.py writes with PyTorch and
// compares pfl's tensors with them, for the tests of the models and the hypernetwork.
package golden

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/safetensors"
)

// File is a golden file.
type File struct {
	t testing.TB
	f *safetensors.File
}

// Open reads the golden file at path (a test failure when it is missing or damaged).
func Open(t testing.TB, path string) *File {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with bash scripts/golden/gen.sh)", err)
	}
	return &File{t, f}
}

// Values are the float64 values and the shape of the tensor name.
func (g *File) Values(name string) ([]float64, []int64) {
	g.t.Helper()
	ts, ok := g.f.Get(name)
	if !ok {
		g.t.Fatalf("golden file lacks %s", name)
	}
	if ts.DType == safetensors.I64 { // labels and indices: small integers, exact in float64
		out := make([]float64, len(ts.Data)/8)
		for i := range out {
			out[i] = float64(int64(binary.LittleEndian.Uint64(ts.Data[8*i:])))
		}
		return out, ts.Shape
	}
	v, err := ts.Float64s()
	if err != nil {
		g.t.Fatal(err)
	}
	return v, ts.Shape
}

// Has reports whether the file holds a tensor name.
func (g *File) Has(name string) bool {
	_, ok := g.f.Get(name)
	return ok
}

// IsInt reports whether the tensor name holds integers (token ids, labels).
func (g *File) IsInt(name string) bool {
	ts, ok := g.f.Get(name)
	return ok && ts.DType == safetensors.I64
}

// Int64s are the values of the integer tensor name.
func (g *File) Int64s(name string) []int64 {
	g.t.Helper()
	v, _ := g.Values(name)
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// Names are the names of the file's tensors that start with prefix, without it, in the
// file's order.
func (g *File) Names(prefix string) []string {
	var out []string
	for _, ts := range g.f.Tensors {
		if strings.HasPrefix(ts.Name, prefix) {
			out = append(out, strings.TrimPrefix(ts.Name, prefix))
		}
	}
	return out
}

// Metadata is the file's metadata value for key.
func (g *File) Metadata(key string) string { return g.f.Metadata[key] }

// Close compares got (a tensor, or one row of it) with the golden tensor name: every
// element within tol·max(1, max|want|).
func (g *File) Close(what string, got *cuda.Tensor, name string, tol float64) {
	g.t.Helper()
	want, _ := g.Values(name)
	have, err := got.Float64s()
	if err != nil {
		g.t.Fatal(err)
	}
	if len(have) != len(want) {
		g.t.Fatalf("%s: %d values, the golden %s has %d", what, len(have), name, len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if d := math.Abs(have[i] - want[i]); !(d <= tol*scale) {
			g.t.Fatalf("%s[%d] = %.17g, PyTorch %.17g (|diff| %.3g > %.3g)", what, i, have[i], want[i], d, tol*scale)
		}
	}
}
