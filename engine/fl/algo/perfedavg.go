package algo

import (
	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// PerFedAvgConfig is Per-FedAvg's setting.
type PerFedAvgConfig struct {
	Alpha float64 // α, the adaptation (inner) step size
	Beta  float64 // β, the meta (outer) step size
	HF    bool    // Per-FedAvg (HF): the Hessian-vector product term, on a third batch
}

// PerFedAvgSettings are Per-FedAvg's config keys, algorithm.perfedavg (train.lr is not
// used: α and β are its step sizes).
type PerFedAvgSettings struct {
	// Alpha is α, the adaptation step's size (also of the one step before evaluation);
	// default 0.001, FedPerfix's PerAvg preset (system/main.py saved_config: its local
	// learning rate, which its client's optimizer takes for this step).
	Alpha float64 `mapstructure:"alpha" json:"alpha"`
	// Beta is β, the meta step's size; default 0.001, FedPerfix's PerAvg preset (its
	// client sets beta to the local learning rate).
	Beta float64 `mapstructure:"beta" json:"beta"`
	// Variant is "fo" (first order: the meta step takes ∇f at the adapted point) or "hf"
	// (Hessian-free: with the Hessian-vector product term, on a third batch); default fo,
	// the version FedPerfix's code implements.
	Variant string `mapstructure:"variant" json:"variant"`
}

// Default is FedPerfix's PerAvg preset, first order.
func (PerFedAvgSettings) Default() PerFedAvgSettings {
	return PerFedAvgSettings{Alpha: 0.001, Beta: 0.001, Variant: "fo"}
}

// Validate reports a value Per-FedAvg cannot run with, naming its config key.
func (c PerFedAvgSettings) Validate() error {
	k := &check.Checker{}
	k.Real("algorithm.perfedavg.alpha", c.Alpha, 0, check.Inf, "[]")
	k.Real("algorithm.perfedavg.beta", c.Beta, 0, check.Inf, "(]")
	k.OneOf("algorithm.perfedavg.variant", c.Variant, "fo", "hf")
	return k.Err()
}

// config is the setting the algorithm runs with.
func (c PerFedAvgSettings) config() PerFedAvgConfig {
	return PerFedAvgConfig{Alpha: c.Alpha, Beta: c.Beta, HF: c.Variant == "hf"}
}

// PerFedAvg is Personalized FedAvg (Fallah, Mokhtari and Ozdaglar, "Personalized Federated
// Learning with Theoretical Guarantees: A Model-Agnostic Meta-Learning Approach", NeurIPS
// 2020, Alg. 1, with its first-order (FO) and Hessian-free (HF) versions). The model is
// shared and averaged as FedAvg's, but each client trains it for the loss after one local
// adaptation step, F(w) = f(w − α∇f(w)): every local step takes consecutive batches D, D′
// (and D″ for HF) of the client's epochs and makes
//
//	temp = w − α ∇f(w; D)
//	FO:  w ← w − β ∇f(temp; D′)
//	HF:  w ← w − β (I − α ∇²f(w; D″)) ∇f(temp; D′),
//
// the Hessian-vector product ∇²f(w; D″)·g being the gradient of ⟨∇f(w; D″), g⟩ with g held
// constant (a second backward pass through the first, cuda.GradOptions.CreateGraph). A
// client is evaluated after one adaptation step: one step of plain SGD at α on one batch of
// its training data, not kept (EvalHooks.FineTune).
//
// Deviations and choices, against the paper and FedPerfix's code (system/flcore/clients/
// clientperavg.py, which implements FO):
//   - HF's Hessian-vector product is exact; the paper estimates it by the gradient
//     difference (∇f(w + δg; D″) − ∇f(w − δg; D″))/(2δ), whose limit δ → 0 this is.
//   - D, D′, D″ are consecutive batches of the client's shuffled epochs (the run's plan);
//     FedPerfix's code splits one loader batch of 2B samples into its halves, which is the
//     same except across an epoch's end. A client whose plan ends inside a step takes an
//     idle batch (no sample: zero gradient) for the rest: FO then takes a zero meta-gradient
//     (FedPerfix's code would take the loss of an empty half, NaN), HF drops the Hessian
//     term.
//   - The adaptation step is plain SGD at α (as FedPerfix's); the meta step is the run's
//     local optimizer at learning rate β (its momentum and weight decay from train.*; plain
//     SGD, FedPerfix's, by default). train.lr is not used.
//   - BatchNorm's running statistics follow every forward pass of a step (two, or three
//     with HF) and are not restored with the parameters, as in FedPerfix's code.
//   - The reported training loss is f(w; D), before adaptation.
type PerFedAvg struct{ PerFedAvgConfig }

// Name is "perfedavg".
func (*PerFedAvg) Name() string { return "perfedavg" }

// Personal is false: everything is averaged, as in FedAvg.
func (*PerFedAvg) Personal(*model.Param) bool { return false }

// TrainHooks take Per-FedAvg's steps (Step) on two batches (FO: D and D′) or three (HF:
// and D″), the meta step at β and the adaptation before evaluation at α (Optimizer).
// Passes is 1 for the first-order variant (each batch of a step is used once, forward and
// backward) and 4/3 for the Hessian-free one (its third batch's Hessian-vector product is a
// double backward, counted as two passes, over three batches).
func (p *PerFedAvg) TrainHooks() fl.TrainHooks {
	if p.HF {
		return fl.TrainHooks{Step: p.Step, Batches: 3, Optimizer: p.Optimizer, Passes: 4.0 / 3}
	}
	return fl.TrainHooks{Step: p.Step, Batches: 2, Optimizer: p.Optimizer, Passes: 1}
}

// EvalHooks evaluate a client after one adaptation step on one training batch.
func (*PerFedAvg) EvalHooks() fl.EvalHooks {
	return fl.EvalHooks{FineTune: &fl.Phase{Epochs: 1, Steps: 1, Train: fl.AllParams}}
}

// Step makes one Per-FedAvg step on the parameters.
func (p *PerFedAvg) Step(s *cuda.Scope, in fl.StepInput) *cuda.Tensor {
	w := in.Params
	grad := func(i int, create bool) (*cuda.Tensor, []*cuda.Tensor) {
		l := in.Loss(s, in.Model, in.Batches[i], in.Passes[i])
		g := s.Grad([]*cuda.Tensor{s.Sum(l, false)}, nil, w, cuda.GradOptions{AllowUnused: true, CreateGraph: create, RetainGraph: create})
		if s.Err() != nil {
			return l, nil
		}
		return l, fl.ZeroMissing(s, g, w)
	}
	loss, g := grad(0, false)
	if g == nil {
		return loss
	}
	// temp = w − α∇f(w; D) in place, for the active clients; w kept aside
	s.SetGradEnabled(false)
	saved := make([]*cuda.Tensor, len(w))
	for i, t := range w {
		saved[i] = s.Clone(t)
	}
	s.ForeachAddcmul(w, g, fl.PerClient(s, w, in.Active), -p.Alpha)
	s.SetGradEnabled(true)
	_, meta := grad(1, false) // ∇f(temp; D′)
	s.SetGradEnabled(false)
	s.ForeachCopy(w, saved)
	s.SetGradEnabled(true)
	if meta == nil {
		return loss
	}
	if p.HF {
		_, g3 := grad(2, true) // ∇f(w; D″), with its graph
		if g3 == nil {
			return loss
		}
		var dot *cuda.Tensor
		for i, gi := range g3 {
			d := s.Sum(s.Mul(gi, s.Detach(meta[i])), false)
			if dot == nil {
				dot = d
			} else {
				dot = s.Add(dot, d)
			}
		}
		hv := s.Grad([]*cuda.Tensor{dot}, nil, w, cuda.GradOptions{AllowUnused: true})
		if s.Err() != nil {
			return loss
		}
		hv = fl.ZeroMissing(s, hv, w)
		s.SetGradEnabled(false)
		for i := range meta {
			meta[i] = s.AddScaled(meta[i], hv[i], -p.Alpha)
		}
		s.SetGradEnabled(true)
	}
	in.Opt.Step(s, w, meta, in.Active)
	return loss
}

// Optimizer is the run's local optimizer at learning rate β for the meta step, and plain
// SGD at α for the adaptation step before evaluation.
func (p *PerFedAvg) Optimizer(phase int, c fl.SGDConfig) fl.Optimizer {
	if phase == fl.FineTunePhase {
		return fl.NewSGD(fl.SGDConfig{LR: p.Alpha})
	}
	return fl.NewSGD(fl.SGDConfig{LR: p.Beta, Momentum: c.Momentum, WeightDecay: c.WeightDecay})
}
