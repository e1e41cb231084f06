package algo

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// smoothVit is a tiny float64 ViT without dropout: GELU, LayerNorm and softmax make its
// loss smooth in the parameters (a ReLU's kinks would spoil finite differences).
func smoothVit(k int, g *cuda.Generator) (model.Model, error) {
	zero := 0.0
	return model.Build(fltest.VitSpec(16, 1, 8, 24, &zero), k, cuda.CPU, cuda.Float64, g)
}

// apflModel is an APFL-wrapped tiny ViT for 2 clients whose w and v differ (the initial
// values plus noise) and whose α rows are alphas.
func apflModel(t *testing.T, s *cuda.Scope, g *cuda.Generator, a *APFL, alphas []float64) model.Model {
	t.Helper()
	m := fltest.Wrapped(t, a, smoothVit, 2, g)
	fltest.Perturb(t, s, g, m, 0.05)
	s.SetGradEnabled(false)
	s.CopyFrom(part(s, m, 2).Params().List[0].T, cuda.FromSlice(s, cuda.CPU, alphas, 2, 1))
	s.SetGradEnabled(true)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAPFLGradients: one backward pass of APFL's step loss gives w the gradient of f(w)
// alone, v α∇f(v̄), and α ⟨v − w, ∇f(v̄)⟩, where ∇f(v̄) comes from a separate forward at
// the mixture's values; and α's gradient is the derivative of the mixture's loss in α, by
// finite differences.
func TestAPFLGradients(t *testing.T) {
	g, err := cuda.NewGenerator(3, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := cuda.NewScope()
	defer s.Close()
	a := &APFL{APFLConfig: APFLConfig{Alpha: 0.25}}
	alphas := []float64{0.3, 0.65}
	m := apflModel(t, s, g, a, alphas)
	b := fltest.RandomBatch(t, s, g, 2, 6)
	pass := &model.Pass{}
	params := model.Tensors(m.Params().Trainable())
	got := s.Grad([]*cuda.Tensor{s.Sum(a.Loss(s, m, b, pass), false)}, nil, params, cuda.GradOptions{})
	w, v, alpha := part(s, m, 0), part(s, m, 1), part(s, m, 2).Params().List[0].T
	wT, vT := model.Tensors(w.Params().Trainable()), model.Tensors(v.Params().Trainable())
	n := len(wT)
	// ∇f(w) from w's own forward: the same ops, so the same bits
	gw := s.Grad([]*cuda.Tensor{s.Sum(fl.MeanCrossEntropy(s, w.Forward(s, b.X, pass), b.Y, b.Mask), false)}, nil, wT, cuda.GradOptions{})
	// ∇f(v̄) at the mixture's values, as leaves of their own
	_, over := a.mixture(s, m, true)
	leaves := map[*model.Param]*cuda.Tensor{}
	var vbar []*cuda.Tensor
	for _, p := range v.Params().Trainable() {
		l := s.Clone(s.Detach(over[p]))
		if err := l.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		leaves[p] = l
		vbar = append(vbar, l)
	}
	gbar := s.Grad([]*cuda.Tensor{s.Sum(fl.MeanCrossEntropy(s, v.Forward(s, b.X, &model.Pass{Override: leaves}), b.Y, b.Mask), false)}, nil, vbar, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n+1 {
		t.Fatalf("%d gradients for 2×%d parameters and α", len(got), n)
	}
	wantDot := make([]float64, 2)
	var absSum [2]float64 // Σ|g v| + Σ|g w| per client
	var count int         // elements per client
	for i := 0; i < n; i++ {
		fltest.SameWithin(t, "w "+w.Params().Trainable()[i].Name, fltest.Values(t, got[i]), fltest.Values(t, gw[i]), func(int) float64 { return 0 })
		gb, vv, ww := fltest.Values(t, gbar[i]), fltest.Values(t, vT[i]), fltest.Values(t, wT[i])
		per := len(gb) / 2
		count += per
		// v: α·∇f(v̄), one product on each side (the same one): at most u|α g| apart each
		want := make([]float64, len(gb))
		for e := range gb {
			want[e] = alphas[e/per] * gb[e]
			wantDot[e/per] += (vv[e] - ww[e]) * gb[e]
			absSum[e/per] += math.Abs(gb[e]*vv[e]) + math.Abs(gb[e]*ww[e])
		}
		fltest.SameWithin(t, "v "+v.Params().Trainable()[i].Name, fltest.Values(t, got[n+i]), want, func(e int) float64 { return 2 * fltest.U * math.Abs(want[e]) })
	}
	// α: autograd sums g·v and g·w over the count elements of a client separately, the
	// reference sums (v − w)·g: each of the sums of count products is within
	// (count+2)·u·Σ|terms| of the exact value (the γ_n bound, plus the product and the
	// difference), so the two are within 2(count+2)·u·(Σ|g v| + Σ|g w|)
	gotAlpha := fltest.Values(t, got[2*n])
	fltest.SameWithin(t, "α", gotAlpha, wantDot, func(k int) float64 { return 2 * float64(count+2) * fltest.U * absSum[k] })

	// finite differences of the mixture's loss L_k(α) in each client's α (the clients'
	// rows are independent, so both move at once): the central difference D(h) is
	// L' + L'''h²/6 + O(h⁴), Richardson's R = (4D(h/2) − D(h))/3 removes the h² term, so R
	// is within |D(h) − D(h/2)| (= L'''h²/8 + O(h⁴), much more than R's O(h⁴)) of L', plus
	// the rounding of the losses: each L within ε = 10·u·macs·|L| (a generous multiple of
	// the forward's operation count per sample, times the batch) amplified by R to 3ε/h
	mixLoss := func(alpha1 []float64) []float64 {
		s.SetGradEnabled(false)
		defer s.SetGradEnabled(true)
		s.CopyFrom(alpha, cuda.FromSlice(s, cuda.CPU, alpha1, 2, 1))
		vm, over := a.mixture(s, m, false)
		l := fltest.Values(t, fl.MeanCrossEntropy(s, vm.Forward(s, b.X, &model.Pass{Override: over}), b.Y, b.Mask))
		s.CopyFrom(alpha, cuda.FromSlice(s, cuda.CPU, alphas, 2, 1))
		return l
	}
	diff := func(h float64) []float64 {
		up := mixLoss([]float64{alphas[0] + h, alphas[1] + h})
		down := mixLoss([]float64{alphas[0] - h, alphas[1] - h})
		return []float64{(up[0] - down[0]) / (2 * h), (up[1] - down[1]) / (2 * h)}
	}
	const h = 1e-3
	d1, d2 := diff(h), diff(h/2)
	at := mixLoss(alphas)
	macs := w.MACs() * float64(b.X.Size(1))
	for k := range 2 {
		r := (4*d2[k] - d1[k]) / 3
		tol := math.Abs(d1[k]-d2[k]) + 3*10*fltest.U*macs*math.Abs(at[k])/h
		if d := math.Abs(gotAlpha[k] - r); !(d <= tol) {
			t.Fatalf("client %d: ∂L/∂α %.12g, finite differences %.12g (difference %.3g > %.3g)", k, gotAlpha[k], r, d, tol)
		}
		t.Logf("client %d: ∂L/∂α %.12g, finite differences %.12g, bound %.2g (truncation %.2g)", k, gotAlpha[k], r, tol, math.Abs(d1[k]-d2[k]))
	}
}

// TestAPFLAlphaStep: α takes plain SGD with the authors' 0.02·α added to its gradient,
// clipped to [0, 1]; an inactive client's α stays; w and v take the run's optimizer.
func TestAPFLAlphaStep(t *testing.T) {
	g, err := cuda.NewGenerator(5, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	a := &APFL{APFLConfig: APFLConfig{Alpha: 0.25}}
	m := fltest.Wrapped(t, a, fltest.Build64(false), 3, g)
	alpha := part(s, m, 2).Params().List[0].T
	start := []float64{0.3, 0.999, 0.5}
	s.CopyFrom(alpha, cuda.FromSlice(s, cuda.CPU, start, 3, 1))
	params := model.Tensors(m.Params().Trainable())
	grads := make([]*cuda.Tensor, len(params))
	for i, p := range params {
		grads[i] = s.Zeros(cuda.Float64, cuda.CPU, p.Shape()...)
	}
	alphaGrad := []float64{0.4, -100, 7}
	grads[len(grads)-1] = cuda.FromSlice(s, cuda.CPU, alphaGrad, 3, 1)
	const lr = 0.05
	opt := a.Optimizer(0, fl.SGDConfig{LR: lr, Momentum: 0.9, WeightDecay: 0.1})
	defer opt.Close()
	opt.Step(s, params, grads, cuda.FromSlice(s, cuda.CPU, []float32{1, 1, 0}))
	got := fltest.Values(t, alpha)
	// α·(1 − lr·0.02) − lr·g: two roundings of values below 1 (and one more for the
	// product lr·0.02), so within 4u
	want := []float64{start[0]*(1-lr*apflAlphaDecay) - lr*alphaGrad[0], 1, start[2]}
	fltest.SameWithin(t, "α", got, want, func(int) float64 { return 4 * fltest.U })
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestAPFLStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
		Seed: 11, Device: cuda.CPU, DType: cuda.Float64, EvalEvery: 1}
	fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy { return &APFL{APFLConfig: APFLConfig{Alpha: 0.25}} }, fltest.Build64(true))
}
