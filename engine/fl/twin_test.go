package fl

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/model"
)

// u is float64's unit roundoff, 2^-53: a correctly rounded operation's relative error.
const u = 0x1p-53

// randomBatch is a float64 batch for k clients of b 16×16 grey images with labels in
// [0, 4); the last client's last real slots are masked out (a partial batch).
func randomBatch(t *testing.T, s *cuda.Scope, g *cuda.Generator, k, b int64) Batch {
	t.Helper()
	x := s.Randn(g, cuda.Float64, cuda.CPU, k, b, 1, 16, 16)
	y := s.RandInt(g, 0, 4, cuda.CPU, k, b)
	mask := make([]float32, k*b)
	for i := range mask {
		mask[i] = 1
	}
	mask[k*b-1], mask[k*b-2] = 0, 0
	return Batch{X: x, Y: y, Mask: cuda.FromSlice(s, cuda.CPU, mask, k, b)}
}

// perturb adds N(0, std²) noise to every trainable parameter of m (in place).
func perturb(t *testing.T, s *cuda.Scope, g *cuda.Generator, m model.Model, std float64) {
	t.Helper()
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	for _, p := range m.Params().Trainable() {
		s.CopyFrom(p.T, s.Add(p.T, s.MulScalar(s.Randn(g, p.T.DType(), cuda.CPU, p.T.Shape()...), std)))
	}
	s.SetGradEnabled(grad)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// values reads a tensor as float64s.
func values(t *testing.T, x *cuda.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sameWithin requires |got − want| ≤ tol(i) elementwise.
func sameWithin(t *testing.T, what string, got, want []float64, tol func(i int) float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol(i)) {
			t.Fatalf("%s[%d]: %.17g, want %.17g (difference %.3g > %.3g)", what, i, got[i], want[i], d, tol(i))
		}
	}
}

// build64 is the tiny ConvNet in float64 (BatchNorm when bn).
func build64(bn bool) Builder { return convnetAs(16, 1, 4, bn, cuda.Float64) }

// wrapped builds a model for k clients with build and wraps it with w.
func wrapped(t *testing.T, w PrepareStage, build Builder, k int, g *cuda.Generator) model.Model {
	t.Helper()
	m, err := build(k, g)
	if err != nil {
		t.Fatal(err)
	}
	j, err := w.PrepareHooks().Wrap(m, Wrapping{Build: build, Gen: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}
