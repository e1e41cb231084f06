package rng

import (
	"math"
	"testing"
)

func TestStreamsAreDistinctAndStable(t *testing.T) {
	keys := []Key{
		{1, "batch", 0, 0}, {1, "batch", 0, 1}, {1, "batch", 1, 0}, {2, "batch", 0, 0},
		{1, "augment", 0, 0}, {1, "batch", -1, -1},
	}
	seen := map[uint64]Key{}
	for _, k := range keys {
		s := Derive(k)
		if prev, ok := seen[s]; ok {
			t.Fatalf("%+v and %+v derive the same seed", prev, k)
		}
		seen[s] = k
		if Derive(k) != s {
			t.Fatalf("%+v is not stable", k)
		}
	}
	a, b := New(keys[0]), New(keys[0])
	for i := 0; i < 10; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same key, different streams")
		}
	}
}

func TestGammaAndDirichletMoments(t *testing.T) {
	r := New(Key{Seed: 3, Purpose: "test"})
	for _, shape := range []float64{0.1, 0.5, 1, 3} {
		const n = 200000
		var m, v float64
		for i := 0; i < n; i++ {
			x := Gamma(r, shape)
			m += x
			v += x * x
		}
		m /= n
		v = v/n - m*m
		// Gamma(k, 1) has mean k and variance k
		if math.Abs(m-shape) > 0.02*math.Max(shape, 1) || math.Abs(v-shape) > 0.05*math.Max(shape, 1) {
			t.Errorf("Gamma(%g): mean %.4f, variance %.4f", shape, m, v)
		}
	}
	p := Dirichlet(r, 0.3, 7)
	var s float64
	for _, x := range p {
		if x < 0 {
			t.Fatalf("negative weight %v", p)
		}
		s += x
	}
	if math.Abs(s-1) > 1e-12 {
		t.Fatalf("weights sum to %g", s)
	}
}
