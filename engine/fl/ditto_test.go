package fl

import (
	"math"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// TestDittoProximalGradient: the gradient of Ditto's step loss (Objective + Regularizer)
// is ∇f(w) for the shared model and ∇f(v) + λ(v − w_global) for the personal one, with
// ∇f from a separate forward of each part and w_global the global model's shared values.
func TestDittoProximalGradient(t *testing.T) {
	g, err := cuda.NewGenerator(7, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := cuda.NewScope()
	defer s.Close()
	const lambda = 0.7
	d := &Ditto{DittoConfig: DittoConfig{Lambda: lambda}}
	build := build64(false)
	global := wrapped(t, d, build, 1, g)
	m := wrapped(t, d, build, 2, g)
	// the stack's rows: global values plus noise, so that v ≠ w ≠ w_global
	for i, p := range m.Params().List {
		s.SetGradEnabled(false)
		s.CopyFrom(p.T, s.Expand(global.Params().List[i].T, p.T.Shape()...))
		s.SetGradEnabled(true)
	}
	perturb(t, s, g, m, 0.05)
	b := randomBatch(t, s, g, 2, 5)
	pass := &model.Pass{Train: true, Mask: b.Mask}
	var params, globals []*cuda.Tensor
	for _, p := range m.Params().Trainable() {
		params = append(params, p.T)
	}
	for _, p := range global.Params().Trainable() {
		globals = append(globals, p.T)
	}
	loss := s.Add(s.Sum(d.Loss(s, m, b, pass), false), d.Penalty(s, params, globals))
	got := s.Grad([]*cuda.Tensor{loss}, nil, params, cuda.GradOptions{})
	// each part's plain gradient, from its own forward
	w, v := part(s, m, 0), part(s, m, 1)
	wT, vT := model.Tensors(w.Params().Trainable()), model.Tensors(v.Params().Trainable())
	gw := s.Grad([]*cuda.Tensor{s.Sum(MeanCrossEntropy(s, w.Forward(s, b.X, pass), b.Y, b.Mask), false)}, nil, wT, cuda.GradOptions{})
	gv := s.Grad([]*cuda.Tensor{s.Sum(MeanCrossEntropy(s, v.Forward(s, b.X, pass), b.Y, b.Mask), false)}, nil, vT, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	n := len(wT)
	if len(got) != 2*n {
		t.Fatalf("%d gradients for %d parameters of each part", len(got), n)
	}
	for i := 0; i < n; i++ {
		// the shared model: exactly its own gradient (the same ops, no penalty)
		sameWithin(t, "shared "+w.Params().Trainable()[i].Name, values(t, got[i]), values(t, gw[i]), func(int) float64 { return 0 })
		// the personal model: a + b with a = ∇f(v), b = λ(v − w_global); autograd adds the
		// same two terms, each rounded at most twice (λ/2·diff doubled is exact), and one
		// rounding of the sum on each side: |got − want| ≤ 4u(|a| + |b|)
		a := values(t, gv[i])
		diff := values(t, s.Sub(vT[i], globals[i]))
		want := make([]float64, len(a))
		for e := range a {
			want[e] = a[e] + lambda*diff[e]
		}
		sameWithin(t, "personal "+v.Params().Trainable()[i].Name, values(t, got[n+i]), want, func(e int) float64 {
			return 4 * u * (math.Abs(a[e]) + math.Abs(lambda*diff[e]))
		})
	}
}

func TestDittoStackedEqualsSequential(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
		Seed: 11, Device: cuda.CPU, DType: cuda.Float64, EvalEvery: 1}
	// BatchNorm: the personal copy's statistics are personal too
	checkStackedEqualsSequential(t, st, cfg, func() Strategy { return &Ditto{DittoConfig: DittoConfig{Lambda: 0.5}} }, build64(true))
}

// TestDittoKeepsThePersonalModels: after a round, the store holds a new personal copy for
// each trained client and the initial values for the others, and nothing shared is kept
// per client.
func TestDittoKeepsThePersonalModels(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	cfg := Config{Rounds: 1, PerRound: 2, Batch: 16, LR: 0.1, Seed: 1, Device: cuda.CPU, DType: cuda.Float64}
	r, err := New(cfg, &Ditto{DittoConfig: DittoConfig{Lambda: 1}}, st.fed, st.train, st.test, build64(false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	met, err := r.Round(0)
	if err != nil {
		t.Fatal(err)
	}
	trained := map[int]bool{}
	for _, c := range met.Clients {
		trained[c] = true
	}
	for i, p := range r.global.Params().List {
		if personal := strings.HasPrefix(p.Name, "personal."); personal != (r.store[i] != nil) {
			t.Fatalf("%s kept per client: %v", p.Name, r.store[i] != nil)
		} else if !personal {
			continue
		}
		init := values(t, p.T) // the global model's personal part is never trained
		rows := values(t, r.store[i])
		n := len(init)
		for c := 0; c < 4; c++ {
			changed := false
			for e := 0; e < n; e++ {
				changed = changed || rows[c*n+e] != init[e]
			}
			if changed != trained[c] {
				t.Fatalf("%s of client %d changed=%v, trained=%v", p.Name, c, changed, trained[c])
			}
		}
	}
}
