package algo

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
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
	build := fltest.Build64(false)
	global := fltest.Wrapped(t, d, build, 1, g)
	m := fltest.Wrapped(t, d, build, 2, g)
	// the stack's rows: global values plus noise, so that v ≠ w ≠ w_global
	for i, p := range m.Params().List {
		s.SetGradEnabled(false)
		s.CopyFrom(p.T, s.Expand(global.Params().List[i].T, p.T.Shape()...))
		s.SetGradEnabled(true)
	}
	fltest.Perturb(t, s, g, m, 0.05)
	b := fltest.RandomBatch(t, s, g, 2, 5)
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
	gw := s.Grad([]*cuda.Tensor{s.Sum(fl.MeanCrossEntropy(s, w.Forward(s, b.X, pass), b.Y, b.Mask), false)}, nil, wT, cuda.GradOptions{})
	gv := s.Grad([]*cuda.Tensor{s.Sum(fl.MeanCrossEntropy(s, v.Forward(s, b.X, pass), b.Y, b.Mask), false)}, nil, vT, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	n := len(wT)
	if len(got) != 2*n {
		t.Fatalf("%d gradients for %d parameters of each part", len(got), n)
	}
	for i := 0; i < n; i++ {
		// the shared model: exactly its own gradient (the same ops, no penalty)
		fltest.SameWithin(t, "shared "+w.Params().Trainable()[i].Name, fltest.Values(t, got[i]), fltest.Values(t, gw[i]), func(int) float64 { return 0 })
		// the personal model: a + b with a = ∇f(v), b = λ(v − w_global); autograd adds the
		// same two terms, each rounded at most twice (λ/2·diff doubled is exact), and one
		// rounding of the sum on each side: |got − want| ≤ 4u(|a| + |b|)
		a := fltest.Values(t, gv[i])
		diff := fltest.Values(t, s.Sub(vT[i], globals[i]))
		want := make([]float64, len(a))
		for e := range a {
			want[e] = a[e] + lambda*diff[e]
		}
		fltest.SameWithin(t, "personal "+v.Params().Trainable()[i].Name, fltest.Values(t, got[n+i]), want, func(e int) float64 {
			return 4 * fltest.U * (math.Abs(a[e]) + math.Abs(lambda*diff[e]))
		})
	}
}

func TestDittoStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
		Seed: 11, Device: cuda.CPU, DType: cuda.Float64, EvalEvery: 1}
	// BatchNorm: the personal copy's statistics are personal too
	fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy { return &Ditto{DittoConfig: DittoConfig{Lambda: 0.5}} }, fltest.Build64(true))
}

// TestDittoKeepsThePersonalModels: after a round, the store holds a new personal copy for
// each trained client and the initial values for the others, and nothing shared is kept
// per client.
func TestDittoKeepsThePersonalModels(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	cfg := fl.Config{Rounds: 1, PerRound: 2, Batch: 16, LR: 0.1, Seed: 1, Device: cuda.CPU, DType: cuda.Float64}
	r, err := fl.New(cfg, &Ditto{DittoConfig: DittoConfig{Lambda: 1}}, st.Fed, st.Train, st.Test, fltest.Build64(false))
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
	names, state := fltest.State(t, r)
	for _, n := range names {
		name, global := strings.CutPrefix(n, "global/")
		if !global {
			continue
		}
		rows := fltest.Rows(t, r, name)
		if personal := strings.HasPrefix(name, "personal."); personal != (rows != nil) {
			t.Fatalf("%s kept per client: %v", name, rows != nil)
		} else if !personal {
			continue
		}
		init := state[n] // the global model's personal part is never trained
		for c := 0; c < 4; c++ {
			if changed := !slices.Equal(rows[c], init); changed != trained[c] {
				t.Fatalf("%s of client %d changed=%v, trained=%v", name, c, changed, trained[c])
			}
		}
	}
}
