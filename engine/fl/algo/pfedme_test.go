package algo

import (
	"fmt"
	"math/big"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// TestPFedMeStepByHand: one pFedMe step on a quadratic loss f(θ) = ½ mean_j (x_j·θ − y_j)²
// (θ a free vector of 3 per client, 2 clients) against the recurrence computed by hand in
// exact rational arithmetic. The data are small integers, the parameters multiples of 1/4
// and the step sizes powers of two, so every intermediate value is a dyadic rational of a
// few dozen bits: float64 holds each exactly (checked), no operation rounds, and the step
// must match to the last bit.
func TestPFedMeStepByHand(t *testing.T) {
	const (
		k, n, dim = 2, 4, 3
		lambda    = 2.0
		plr       = 1.0 / 8
		eta       = 1.0 / 4
		inner     = 3
	)
	x := []float64{ // [k, n, dim]
		1, 0, -1, 2, 1, 0, 0, -1, 1, -2, 1, 1,
		0, 2, 1, 1, -1, 0, 1, 1, 1, 0, 0, -2}
	y := []float64{1, -2, 0, 3, -1, 2, 1, 0} // [k, n]
	theta0 := []float64{0.25, -0.5, 0.75, 0, 0.5, -0.25}
	w0 := []float64{-0.25, 0.5, 0, 1, 0.25, -0.5}

	s := cuda.NewScope()
	defer s.Close()
	p := &PFedMe{PFedMeConfig: PFedMeConfig{Lambda: lambda, InnerSteps: inner, PersonalLR: plr, Beta: 1}}
	m, b, quadratic := pfedmeToy(t, s, p, x, y, w0, theta0, k, n, dim)
	wT, thetaT := part(s, m, 0).Params().List[0].T, part(s, m, 1).Params().List[0].T
	opt := fl.NewSGD(fl.SGDConfig{LR: eta})
	defer opt.Close()
	p.Step(s, fl.StepInput{Model: m, Batches: []fl.Batch{b}, Passes: []*model.Pass{{}}, Opt: opt,
		Active: cuda.FromSlice(s, cuda.CPU, []float32{1, 1}), Loss: quadratic})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}

	// by hand: θ ← θ − plr (Σ_j r_j x_j / n + λ(θ − w)) three times, then w ← w − ηλ(w − θ)
	rat := func(v float64) *big.Rat { return new(big.Rat).SetFloat64(v) }
	exact := func(what string, r *big.Rat) float64 {
		f, ok := r.Float64()
		if !ok {
			t.Fatalf("%s = %s is not a float64: the test's data must keep every value exact", what, r)
		}
		return f
	}
	var wantTheta, wantW []float64
	for c := 0; c < k; c++ {
		th := make([]*big.Rat, dim)
		w := make([]*big.Rat, dim)
		for d := range dim {
			th[d], w[d] = rat(theta0[c*dim+d]), rat(w0[c*dim+d])
		}
		for range inner {
			grad := make([]*big.Rat, dim)
			for d := range grad {
				grad[d] = new(big.Rat)
			}
			for j := 0; j < n; j++ {
				r := rat(-y[c*n+j])
				for d := range dim {
					r.Add(r, new(big.Rat).Mul(rat(x[(c*n+j)*dim+d]), th[d]))
				}
				exact("a residual", r)
				for d := range dim {
					grad[d].Add(grad[d], new(big.Rat).Mul(r, rat(x[(c*n+j)*dim+d]/n)))
					exact("a partial gradient", grad[d])
				}
			}
			for d := range dim {
				step := new(big.Rat).Add(grad[d], new(big.Rat).Mul(rat(lambda), new(big.Rat).Sub(th[d], w[d])))
				th[d] = new(big.Rat).Sub(th[d], new(big.Rat).Mul(rat(plr), step))
				exact("θ", th[d])
			}
		}
		for d := range dim {
			pull := new(big.Rat).Mul(rat(lambda), new(big.Rat).Sub(w[d], th[d]))
			wantTheta = append(wantTheta, exact("θ", th[d]))
			wantW = append(wantW, exact("w", new(big.Rat).Sub(w[d], new(big.Rat).Mul(rat(eta), pull))))
		}
	}
	exactly := func(int) float64 { return 0 }
	fltest.SameWithin(t, "θ", fltest.Values(t, thetaT), wantTheta, exactly)
	fltest.SameWithin(t, "w", fltest.Values(t, wT), wantW, exactly)

	// the server's step, β = 1/2, weights 1/4 and 3/4: (1 − β) w_global + β Σ_k p_k w_k
	p.Beta = 0.5
	global := cuda.FromSlice(s, cuda.CPU, []float64{0.5, -1, 0.25}, 1, dim)
	if err := p.Aggregate(s, []*cuda.Tensor{global}, []*cuda.Tensor{wT}, cuda.FromSlice(s, cuda.CPU, []float64{0.25, 0.75})); err != nil {
		t.Fatal(err)
	}
	var wantG []float64
	for d, g0 := range []float64{0.5, -1, 0.25} {
		mean := new(big.Rat).Add(new(big.Rat).Mul(rat(0.25), rat(wantW[d])), new(big.Rat).Mul(rat(0.75), rat(wantW[dim+d])))
		wantG = append(wantG, exact("w_global", new(big.Rat).Add(new(big.Rat).Mul(rat(0.5), rat(g0)), new(big.Rat).Mul(rat(0.5), mean))))
	}
	fltest.SameWithin(t, "w_global", fltest.Values(t, global), wantG, exactly)
}

// pfedmeToy is the quadratic toy of TestPFedMeStepByHand: θ and w free vectors of dim per
// client (k clients) set to theta0 and w0, one batch of n samples x [k, n, dim] with targets
// y [k, n], and the loss f(θ) = ½ mean_j (x_j·θ − y_j)².
func pfedmeToy(t *testing.T, s *cuda.Scope, p *PFedMe, x, y, w0, theta0 []float64, k, n, dim int64) (model.Model, fl.Batch, func(*cuda.Scope, model.Model, fl.Batch, *model.Pass) *cuda.Tensor) {
	t.Helper()
	g, err := cuda.NewGenerator(1, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	build := func(kk int, gen *cuda.Generator) (model.Model, error) {
		return model.NewFree("v", model.RoleFC, 0, kk, cuda.CPU, cuda.Float64, gen, dim)
	}
	m := fltest.Wrapped(t, p, build, int(k), g)
	wT, thetaT := part(s, m, 0).Params().List[0].T, part(s, m, 1).Params().List[0].T
	s.SetGradEnabled(false)
	s.CopyFrom(wT, cuda.FromSlice(s, cuda.CPU, w0, k, dim))
	s.CopyFrom(thetaT, cuda.FromSlice(s, cuda.CPU, theta0, k, dim))
	s.SetGradEnabled(true)
	mask := make([]float32, k*n)
	for i := range mask {
		mask[i] = 1
	}
	b := fl.Batch{X: cuda.FromSlice(s, cuda.CPU, x, k, n, dim), Y: cuda.FromSlice(s, cuda.CPU, y, k, n),
		Mask: cuda.FromSlice(s, cuda.CPU, mask, k, n)}
	quadratic := func(s *cuda.Scope, fm model.Model, b fl.Batch, _ *model.Pass) *cuda.Tensor {
		th := part(s, fm, 1).Params().List[0].T                                        // θ [k, dim]
		r := s.Sub(s.Sum(s.Mul(b.X, s.Unsqueeze(th, 1)), false, 2), b.Y)               // [k, n]
		return s.DivScalar(s.Sum(s.MulScalar(s.Mul(r, r), 0.5), false, 1), float64(n)) // [k]
	}
	return m, b, quadratic
}

// TestPFedMeOuterStepIsPlain: the local model's step is w ← w − lr·λ(w − θ) whatever the
// run's momentum and weight decay (FedTP's train_net_pfedMe and the authors' userpFedMe
// move w by hand), through the optimizer the run makes for pFedMe's phase (hooks), over
// three steps (momentum would show from the second, weight decay from the first).
func TestPFedMeOuterStepIsPlain(t *testing.T) {
	const k, n, dim = 2, 4, 3
	x := []float64{1, 0, -1, 2, 1, 0, 0, -1, 1, -2, 1, 1, 0, 2, 1, 1, -1, 0, 1, 1, 1, 0, 0, -2}
	y := []float64{1, -2, 0, 3, -1, 2, 1, 0}
	for _, run := range []fl.SGDConfig{
		{LR: 0.25},
		{LR: 0.25, Momentum: 0.9},
		{LR: 0.25, WeightDecay: 0.5},
		{LR: 0.25, Momentum: 0.9, WeightDecay: 1e-3},
	} {
		s := cuda.NewScope()
		p := &PFedMe{PFedMeConfig: PFedMeConfig{Lambda: 2, InnerSteps: 3, PersonalLR: 0.125, Beta: 1}}
		m, b, quadratic := pfedmeToy(t, s, p, x, y, []float64{-0.25, 0.5, 0, 1, 0.25, -0.5}, []float64{0.25, -0.5, 0.75, 0, 0.5, -0.25}, k, n, dim)
		wT, thetaT := part(s, m, 0).Params().List[0].T, part(s, m, 1).Params().List[0].T
		opt := p.Optimizer(0, run)
		for step := range 3 {
			before := fltest.Values(t, wT)
			p.Step(s, fl.StepInput{Model: m, Batches: []fl.Batch{b}, Passes: []*model.Pass{{}}, Opt: opt,
				Active: cuda.FromSlice(s, cuda.CPU, []float32{1, 1}), Loss: quadratic})
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			theta := fltest.Values(t, thetaT)
			want := make([]float64, len(before))
			for i, w := range before {
				want[i] = w - run.LR*p.Lambda*(w-theta[i])
			}
			fltest.SameWithin(t, fmt.Sprintf("run %+v, step %d: w", run, step), fltest.Values(t, wT), want, func(int) float64 { return 1e-12 })
		}
		opt.Close()
		s.Close()
	}
}

// TestPFedMeStartsFromTheGlobalModel: Start makes θ a copy of the prepared w, BatchNorm
// statistics included.
func TestPFedMeStartsFromTheGlobalModel(t *testing.T) {
	g, err := cuda.NewGenerator(2, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := cuda.NewScope()
	defer s.Close()
	p := &PFedMe{PFedMeConfig: PFedMeConfig{Lambda: 15, InnerSteps: 5, PersonalLR: 0.01, Beta: 1}}
	m := fltest.Wrapped(t, p, fltest.Build64(true), 2, g)
	s.SetGradEnabled(false)
	for _, q := range part(s, m, 0).Params().List {
		s.CopyFrom(q.T, s.AddScalar(q.T, 0.5)) // w (and its statistics) apart from θ
	}
	p.Start(s, m)
	w, theta := part(s, m, 0).Params().List, part(s, m, 1).Params().List
	for i, q := range w {
		fltest.SameWithin(t, theta[i].Name, fltest.Values(t, theta[i].T), fltest.Values(t, q.T), func(int) float64 { return 0 })
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPFedMeStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
		Seed: 11, Device: cuda.CPU, DType: cuda.Float64, EvalEvery: 1}
	fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy {
		return &PFedMe{PFedMeConfig: PFedMeConfig{Lambda: 15, InnerSteps: 3, PersonalLR: 0.01, Beta: 0.8}}
	}, fltest.Build64(true))
}

func TestPFedMeAllClientsStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 2, Epochs: 1, Batch: 7, LR: 0.05, Seed: 11, Device: cuda.CPU, DType: cuda.Float64, EvalEvery: 1}
	fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy {
		return &PFedMe{PFedMeConfig: PFedMeConfig{Lambda: 15, InnerSteps: 2, PersonalLR: 0.01, Beta: 0.8, AllClients: true}}
	}, fltest.Build64(true))
}
