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

// TestPerFedAvgMetaGradient: with β = 1 and a fresh optimizer one step moves w by −∇F,
// where F is Per-FedAvg's objective for its variant: HF with D″ = D follows the true
// meta-gradient of F(w) = f(w − α∇f(w; D); D′), FO the gradient of f(·; D′) at
// temp = w − α∇f(w; D). Each is checked, per client, against finite differences of that
// function along a random direction, on a smooth tiny ViT in float64.
func TestPerFedAvgMetaGradient(t *testing.T) {
	for _, hf := range []bool{false, true} {
		name := map[bool]string{false: "FO", true: "HF"}[hf]
		t.Run(name, func(t *testing.T) {
			g, err := cuda.NewGenerator(13, cuda.CPU)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s := cuda.NewScope()
			defer s.Close()
			const alpha = 0.3
			p := &PerFedAvg{PerFedAvgConfig{Alpha: alpha, Beta: 1, HF: hf}}
			m, err := smoothVit(2, g)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			fltest.Perturb(t, s, g, m, 0.05) // the two clients' rows apart
			d, d2 := fltest.RandomBatch(t, s, g, 2, 6), fltest.RandomBatch(t, s, g, 2, 6)
			batches := []fl.Batch{d, d2, d} // D″ = D
			pass := &model.Pass{}
			w := model.Tensors(m.Params().Trainable())
			start := make([][]float64, len(w))
			for i, t0 := range w {
				start[i] = fltest.Values(t, t0)
			}
			opt := fl.NewSGD(fl.SGDConfig{LR: 1})
			defer opt.Close()
			per := p.TrainHooks().Batches
			p.Step(s, fl.StepInput{Model: m, Batches: batches[:per], Passes: []*model.Pass{pass, pass, pass}[:per],
				Params: w, Opt: opt, Active: cuda.FromSlice(s, cuda.CPU, []float32{1, 1}), Loss: fltest.MeanCELoss})
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			// a random direction u, and ⟨−Δw, u⟩ per client (Δw = −∇F exactly up to the
			// rounding of w − ∇F and of the difference: ≤ 2u(|w| + |w'|) per element)
			dirs := make([][]float64, len(w))
			var dot, dotErr [2]float64
			for i, t1 := range w {
				after := fltest.Values(t, t1)
				dirs[i] = fltest.Values(t, s.Randn(g, cuda.Float64, cuda.CPU, t1.Shape()...))
				per := len(after) / 2
				for e := range after {
					dot[e/per] += (start[i][e] - after[e]) * dirs[i][e]
					dotErr[e/per] += 2 * fltest.U * (math.Abs(start[i][e]) + math.Abs(after[e])) * math.Abs(dirs[i][e])
				}
			}
			// the function along w + εu, per client: F for HF, f(temp + εu; D′) for FO
			set := func(eps float64) {
				s.SetGradEnabled(false)
				for i, t1 := range w {
					n := int64(len(start[i]))
					moved := make([]float64, n)
					for e := range moved {
						moved[e] = start[i][e] + eps*dirs[i][e]
					}
					s.CopyFrom(t1, cuda.FromSlice(s, cuda.CPU, moved, t1.Shape()...))
				}
				s.SetGradEnabled(true)
			}
			adapt := func() map[*model.Param]*cuda.Tensor {
				gr := s.Grad([]*cuda.Tensor{s.Sum(fltest.MeanCELoss(s, m, d, pass), false)}, nil, w, cuda.GradOptions{})
				over := map[*model.Param]*cuda.Tensor{}
				s.SetGradEnabled(false)
				for i, q := range m.Params().Trainable() {
					over[q] = s.AddScaled(s.Detach(w[i]), gr[i], -alpha)
				}
				s.SetGradEnabled(true)
				return over
			}
			var foShift map[*model.Param]*cuda.Tensor // FO: the adapted point's shift −α∇f(w; D), fixed
			if !hf {
				set(0)
				over := adapt()
				foShift = map[*model.Param]*cuda.Tensor{}
				for i, q := range m.Params().Trainable() {
					foShift[q] = s.Sub(over[q], s.Detach(w[i])) // −α∇f(w; D) at the start
				}
			}
			F := func(eps float64) []float64 {
				set(eps)
				var over map[*model.Param]*cuda.Tensor
				if hf {
					over = adapt()
				} else {
					over = map[*model.Param]*cuda.Tensor{}
					for i, q := range m.Params().Trainable() {
						over[q] = s.Add(s.Detach(w[i]), foShift[q])
					}
				}
				s.SetGradEnabled(false)
				defer s.SetGradEnabled(true)
				return fltest.Values(t, fl.MeanCrossEntropy(s, m.Forward(s, d2.X, &model.Pass{Override: over}), d2.Y, d2.Mask))
			}
			diff := func(h float64) []float64 {
				up, down := F(h), F(-h)
				return []float64{(up[0] - down[0]) / (2 * h), (up[1] - down[1]) / (2 * h)}
			}
			// Richardson as in TestAPFLGradients: R = (4D(h/2) − D(h))/3 is within
			// |D(h) − D(h/2)| of the derivative, plus the losses' rounding 3ε/h with
			// ε = 10·u·macs·|F| (HF's F holds a backward pass too: 3× the forward's count)
			const h = 1e-3
			d1, dh := diff(h), diff(h/2)
			at := F(0)
			macs := 3 * m.MACs() * float64(d.X.Size(1))
			for k := range 2 {
				r := (4*dh[k] - d1[k]) / 3
				tol := math.Abs(d1[k]-dh[k]) + 3*10*fltest.U*macs*math.Abs(at[k])/h + dotErr[k]
				if diff := math.Abs(dot[k] - r); !(diff <= tol) {
					t.Fatalf("client %d: ⟨∇F, u⟩ %.12g from the step, finite differences %.12g (difference %.3g > %.3g)", k, dot[k], r, diff, tol)
				}
				t.Logf("client %d: ⟨∇F, u⟩ %.12g, finite differences %.12g, bound %.2g", k, dot[k], r, tol)
			}
		})
	}
}

// countingStep is a strategy whose Step hook that trains nothing and reports, per client, the real samples
// of the batches it was handed (zero for an inactive client).
type countingStep struct{ n int }

func (countingStep) Name() string                { return "counting" }
func (countingStep) Personal(*model.Param) bool  { return false }
func (c countingStep) TrainHooks() fl.TrainHooks { return fl.TrainHooks{Step: c.step, Batches: c.n} }
func (c countingStep) step(s *cuda.Scope, in fl.StepInput) *cuda.Tensor {
	var sum *cuda.Tensor
	for _, b := range in.Batches {
		n := s.Sum(b.Mask, false, 1)
		if sum == nil {
			sum = n
		} else {
			sum = s.Add(sum, n)
		}
	}
	return s.Mul(sum, in.Active)
}

// TestStepHookTakesEveryBatchOnce: a Step hook of n batches a step is handed every real
// sample of the clients' epochs once, in ⌈steps/n⌉ steps per client; with train.drop_last,
// floor(m/(n·B)) full steps an epoch (PyTorch's drop_last=True with batch n·B: PFLlib's
// Per-FedAvg loader), every one of n·B real samples.
func TestStepHookTakesEveryBatchOnce(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	for _, n := range []int{1, 2, 3} {
		for _, drop := range []bool{false, true} {
			cfg := fl.Config{Rounds: 1, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Seed: 11, Device: cuda.CPU, DropLast: drop}
			r, err := fl.New(cfg, countingStep{n}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
			if err != nil {
				t.Fatal(err)
			}
			met, err := r.Round(0)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			var samples, pairs, all int
			for _, c := range met.Clients {
				m := len(st.Fed.Part.Train[c])
				all += cfg.Epochs * m
				if drop {
					steps := m / (n * cfg.Batch)
					samples += cfg.Epochs * steps * n * cfg.Batch
					pairs += cfg.Epochs * steps
					continue
				}
				samples += cfg.Epochs * m
				pairs += (cfg.Epochs*((m+cfg.Batch-1)/cfg.Batch) + n - 1) / n
			}
			if drop && (samples == 0 || samples == all) {
				t.Fatalf("n=%d: the clients' sizes leave nothing (or everything) to drop: %d of %d samples", n, samples, all)
			}
			// the loss is the mean over (client, step) pairs of the counts, summed in float32
			// (exact: integers below 2^24)
			if met.Samples != samples || met.TrainLoss*float64(max(pairs, 1)) != float64(samples) {
				t.Fatalf("n=%d drop_last %v: %d samples and loss×pairs %g, want %d samples in %d pairs", n, drop, met.Samples, met.TrainLoss*float64(pairs), samples, pairs)
			}
		}
	}
}

func TestPerFedAvgStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	for _, hf := range []bool{false, true} {
		t.Run(map[bool]string{false: "FO", true: "HF"}[hf], func(t *testing.T) {
			cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
				Seed: 11, Device: cuda.CPU, DType: cuda.Float64, EvalEvery: 1}
			fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy {
				return &PerFedAvg{PerFedAvgConfig{Alpha: 0.05, Beta: 0.05, HF: hf}}
			}, fltest.Build64(true))
		})
	}
}
