package hyper

import (
	"math"
	"testing"

	"pfl/cuda"
)

func tinyNet(t *testing.T) *Net {
	t.Helper()
	g, _ := cuda.NewGenerator(5, cuda.CPU)
	defer g.Close()
	n, err := New(Config{Clients: 4, Embed: 3, Hidden: 5, Layers: 3}, []Target{{"a", []int64{2, 3}}, {"b", []int64{4}}}, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func vals(t *testing.T, x *cuda.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGradientIsTheWeightedJacobianProduct checks the one-VJP server gradient against
// Σ_i (m_i/M) J_iᵀ ΔW_i with every Jacobian column J_i[:, j] = ∂W_i/∂φ_j built by central
// finite differences of the generated weights, for every element of every parameter
// (embeddings included: rows of clients outside the round must get zero).
func TestGradientIsTheWeightedJacobianProduct(t *testing.T) {
	n := tinyNet(t)
	s := cuda.NewScope()
	defer s.Close()
	g, _ := cuda.NewGenerator(9, cuda.CPU)
	defer g.Close()
	clients := []int64{3, 1}
	rows := cuda.FromSlice(s, cuda.CPU, clients)
	w := []float64{0.3, 0.7}
	gen := n.Generate(s, rows)
	delta := make([]*cuda.Tensor, len(gen))
	for i, x := range gen {
		delta[i] = s.Randn(g, cuda.Float64, cuda.CPU, x.Shape()...)
	}
	got := n.Gradient(s, gen, delta, cuda.FromSlice(s, cuda.CPU, w))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var deltas [][]float64
	for _, d := range delta {
		deltas = append(deltas, vals(t, d))
	}
	generate := func() [][]float64 {
		sc := cuda.NewScope()
		defer sc.Close()
		sc.SetGradEnabled(false)
		var out [][]float64
		for _, x := range n.Generate(sc, rows) {
			out = append(out, vals(t, x))
		}
		return out
	}
	const eps = 1e-6
	checked := 0
	for pi, p := range n.Params() {
		gv := vals(t, got[pi])
		for j := int64(0); j < p.Numel(); j++ {
			flat := s.Reshape(s.Detach(p), -1)
			orig := vals(t, s.Select(flat, 0, j))[0]
			set := func(v float64) {
				sc := cuda.NewScope()
				defer sc.Close()
				sc.SetGradEnabled(false)
				sc.CopyFrom(sc.Narrow(sc.Reshape(sc.Detach(p), -1), 0, j, 1), cuda.FromSlice(sc, cuda.CPU, []float64{v}))
				if err := sc.Err(); err != nil {
					t.Fatal(err)
				}
			}
			set(orig + eps)
			plus := generate()
			set(orig - eps)
			minus := generate()
			set(orig)
			var want float64
			for ti := range plus {
				per := len(plus[ti]) / len(clients)
				for e := range plus[ti] {
					col := (plus[ti][e] - minus[ti][e]) / (2 * eps)
					want += w[e/per] * col * deltas[ti][e]
				}
			}
			if math.Abs(gv[j]-want) > 1e-6*(1+math.Abs(want)) {
				t.Fatalf("%s[%d]: VJP %.10g, finite-difference formula %.10g", n.Names()[pi], j, gv[j], want)
			}
			checked++
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	// embedding rows 0 and 2 are not in the round: exactly zero
	emb := vals(t, got[0])
	for _, r := range []int{0, 2} {
		for e := 0; e < 3; e++ {
			if emb[r*3+e] != 0 {
				t.Fatalf("embedding of client %d got gradient %g", r, emb[r*3+e])
			}
		}
	}
	if int64(checked) != n.Count() {
		t.Fatalf("checked %d of %d elements", checked, n.Count())
	}
}

// TestStepIsTorchSGD checks two steps of SGD with momentum and weight decay element by
// element against the formula, on every parameter.
func TestStepIsTorchSGD(t *testing.T) {
	n := tinyNet(t)
	s := cuda.NewScope()
	defer s.Close()
	g, _ := cuda.NewGenerator(2, cuda.CPU)
	defer g.Close()
	c := n.Cfg
	p0 := make([][]float64, len(n.Params()))
	buf := make([][]float64, len(n.Params()))
	for i, p := range n.Params() {
		p0[i] = vals(t, p)
		buf[i] = make([]float64, len(p0[i]))
	}
	for step := 0; step < 2; step++ {
		var grads []*cuda.Tensor
		for _, p := range n.Params() {
			grads = append(grads, s.Randn(g, cuda.Float64, cuda.CPU, p.Shape()...))
		}
		n.Step(s, grads)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		for i, p := range n.Params() {
			gv := vals(t, grads[i])
			for e := range p0[i] {
				d := gv[e] + c.WeightDecay*p0[i][e]
				buf[i][e] = c.Momentum*buf[i][e] + d
				p0[i][e] -= c.LR * buf[i][e]
			}
			got := vals(t, p)
			for e := range got {
				if math.Abs(got[e]-p0[i][e]) > 1e-14 {
					t.Fatalf("step %d %s[%d] = %g, want %g", step, n.Names()[i], e, got[e], p0[i][e])
				}
			}
		}
	}
}

func TestDefaultsAndBadConfig(t *testing.T) {
	n := tinyNet(t)
	if c := n.Cfg; c.LR != 0.01 || c.Momentum != 0.9 || c.WeightDecay != 1e-3 {
		t.Fatalf("defaults %+v", c)
	}
	// the allocated parameters, counted by hand: 4 clients × 3 embedding; trunk 3→5, 5→5,
	// 5→5 with biases; heads 5→6 and 5→4 with biases
	if want := int64(4*3 + (3*5 + 5) + 2*(5*5+5) + (5*6 + 6) + (5*4 + 4)); n.Count() != want || len(n.Names()) != 1+2*3+2*2 {
		t.Fatalf("count %d in %d tensors, want %d in 11", n.Count(), len(n.Names()), want)
	}
	targets := []Target{{"qkv", []int64{1536, 128}}}
	for _, bad := range []Config{{}, {Clients: 3, Momentum: 1}, {Clients: 3, LR: -1}} {
		if _, err := New(bad, targets, cuda.CPU, cuda.Float32, nil); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := New(Config{Clients: 2}, nil, cuda.CPU, cuda.Float32, nil); err == nil {
		t.Error("no targets accepted")
	}
}
