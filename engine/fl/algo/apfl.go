package algo

import (
	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// APFLConfig is APFL's setting, the config's algorithm.apfl.
type APFLConfig struct {
	// Alpha is the mixing weight α every client starts from (APFL learns each client's);
	// default 0.25, FedPerfix's APFL preset (system/main.py, saved_config; its --alpha
	// flag alone defaults to 1).
	Alpha float64 `mapstructure:"alpha" json:"alpha"`
}

// Default is APFL's default setting.
func (APFLConfig) Default() APFLConfig { return APFLConfig{Alpha: 0.25} }

// Validate reports a value APFL cannot run with, naming its config key.
func (c APFLConfig) Validate() error {
	k := &check.Checker{}
	k.Real("algorithm.apfl.alpha", c.Alpha, 0, 1, "[]")
	return k.Err()
}

// apflAlphaDecay is the term 0.02·α that the authors' code adds to α's gradient.
const apflAlphaDecay = 0.02

// APFL is Adaptive Personalized Federated Learning (Deng, Kamani and Mahdavi, "Adaptive
// Personalized Federated Learning", arXiv:2003.13461, 2020, Alg. 1 with its adaptive α).
// Each client keeps, beside its copy w of the global model (trained by local SGD and
// averaged, exactly as FedAvg), a local model v and a mixing weight α ∈ [0, 1], and its
// personalized model is the mixture
//
//	v̄ = α v + (1 − α) w.
//
// Every local step, on one batch, takes (all from the values before the step)
//
//	w ← w − η ∇f(w)
//	v ← v − η ∇_v f(v̄) = v − η α ∇f(v̄)
//	α ← clip₀¹(α − η (⟨v − w, ∇f(v̄)⟩ + 0.02 α)),
//
// in one backward pass of f(w) + f(v̄) with w entering v̄ detached, so that w gets ∇f(w)
// alone while v and α get the mixture's gradients (∂v̄/∂α = v − w). The model is
// model.Join(w, v, α) (twin.go; α is a model.Free parameter of role mixing): v and α stay
// with their client, v starting as a copy of the initial global model, α at Alpha; a
// client predicts with the mixture of its v and α and the global w.
//
// Deviations and choices, each checked against the paper and the authors' FedTorch code
// (fedtorch/comms/utils/flow_utils.py alpha_update, copied into FedPerfix's
// system/flcore/clients/clientapfl.py):
//   - The term 0.02·α in α's gradient is the authors' code's (a weight decay on α), not
//     the paper's; clipping α to [0, 1] is both's.
//   - α's gradient is the paper's ⟨v − w, ∇f(v̄)⟩ at the step's starting point; the code
//     takes α·∇f_v + (1 − α)·∇f_w from the two models' own gradients, with v − w after
//     the step.
//   - v trains through the mixture's loss, as the paper and FedTorch; FedPerfix's code
//     trains v on its own loss and overwrites it with the mixture after each round.
//   - w and v take the run's local optimizer (its momentum and weight decay; plain SGD as
//     in the paper by default); α takes plain SGD at the run's learning rate (FedPerfix's).
//   - With BatchNorm, the mixture runs on v's running statistics (v is never run on its
//     own); w keeps and averages its own.
//   - The reported training loss is f(w) + f(v̄).
type APFL struct {
	APFLConfig
	twins
	alphas map[*cuda.Tensor]bool // the α tensors, in every model the run built
}

// Name is "apfl".
func (*APFL) Name() string { return "apfl" }

// PrepareHooks join the local model v and the mixing weight α beside every model the run
// builds (Wrap).
func (a *APFL) PrepareHooks() fl.PrepareHooks { return fl.PrepareHooks{Wrap: a.Wrap} }

// TrainHooks train w on f(w) and v and α through the mixture (Loss), α on its own clipped
// SGD (Optimizer); every training sample goes forward and backward through the global copy
// and through the mixture (Passes 2: FedPerfix's Table 2 counts APFL's computation at
// 200%).
func (a *APFL) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Loss: a.Loss, Optimizer: a.Optimizer, Passes: 2}
}

// EvalHooks predict with the mixture.
func (a *APFL) EvalHooks() fl.EvalHooks { return fl.EvalHooks{Predict: a.Predict} }

// Wrap joins the local model v and the mixing weight α ([K, 1], "mixing.alpha") beside
// m.
func (a *APFL) Wrap(m model.Model, w fl.Wrapping) (model.Model, error) {
	ps := m.Params()
	alpha, err := model.NewFree("alpha", model.RoleMixing, a.Alpha, ps.K, ps.Device, ps.DType, w.Gen, 1)
	if err != nil {
		return nil, err
	}
	j, err := a.join(m, w, "mixing.", alpha)
	if err != nil {
		alpha.Close()
		return nil, err
	}
	if a.alphas == nil {
		a.alphas = map[*cuda.Tensor]bool{}
	}
	if t := alpha.Params().List[0].T; t != nil {
		a.alphas[t] = true
	}
	return j, nil
}

// mixture returns the local model v and the override that runs it as the mixture
// α v + (1 − α) w, parameter by parameter (buffers stay v's); with detach, w enters
// without its gradient.
func (a *APFL) mixture(s *cuda.Scope, m model.Model, detach bool) (model.Model, map[*model.Param]*cuda.Tensor) {
	w, v, mix := part(s, m, 0), part(s, m, 1), part(s, m, 2)
	if w == nil {
		return nil, nil
	}
	alpha := mix.Params().List[0].T // [K, 1]
	shared := w.Params().List
	over := map[*model.Param]*cuda.Tensor{}
	views := map[int]*cuda.Tensor{} // α and 1 − α viewed as [K, 1, ...] per rank
	oneMinus := map[int]*cuda.Tensor{}
	for i, p := range v.Params().List {
		if p.Buffer {
			continue
		}
		rank := p.T.Dim()
		if views[rank] == nil {
			shape := make([]int64, rank)
			for j := range shape {
				shape[j] = 1
			}
			shape[0] = -1
			views[rank] = s.Reshape(alpha, shape...)
			oneMinus[rank] = s.AddScalar(s.Neg(views[rank]), 1)
		}
		wt := shared[i].T
		if detach {
			wt = s.Detach(wt)
		}
		over[p] = s.Add(s.Mul(views[rank], p.T), s.Mul(oneMinus[rank], wt))
	}
	return v, over
}

// Loss is f(w) + f(v̄) on the batch, each the mean cross-entropy over the client's real
// samples, with w detached inside v̄.
func (a *APFL) Loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	w := part(s, m, 0)
	v, over := a.mixture(s, m, true)
	if v == nil {
		return nil
	}
	mixed := *pass
	mixed.Override = over
	return s.Add(fl.MeanCrossEntropy(s, w.Forward(s, b.X, pass), b.Y, b.Mask), fl.MeanCrossEntropy(s, v.Forward(s, b.X, &mixed), b.Y, b.Mask))
}

// Optimizer is the run's local optimizer for w and v, and for α plain SGD at the run's
// learning rate with the authors' 0.02·α added to its gradient, clipped to [0, 1] after
// every step.
func (a *APFL) Optimizer(_ int, c fl.SGDConfig) fl.Optimizer {
	return &splitOptimizer{in: func(t *cuda.Tensor) bool { return a.alphas[t] },
		rest: fl.NewSGD(c), part: clipped{fl.NewSGD(fl.SGDConfig{LR: c.LR, WeightDecay: apflAlphaDecay}), 0, 1}}
}

// clipped clips its parameters to [lo, hi] after every step of its optimizer (a clipped
// value of an inactive client is already in range, so it stays unchanged).
type clipped struct {
	fl.Optimizer
	lo, hi float64
}

func (o clipped) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	o.Optimizer.Step(s, params, grads, active)
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	for _, p := range params {
		s.CopyFrom(p, s.Clamp(p, o.lo, o.hi))
	}
	s.SetGradEnabled(grad)
}

// Predict is the mixture α v + (1 − α) w of the client's v and α with the global w.
func (a *APFL) Predict(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor {
	v, over := a.mixture(s, m, false)
	if v == nil {
		return nil
	}
	return v.Forward(s, x, &model.Pass{Override: over})
}
