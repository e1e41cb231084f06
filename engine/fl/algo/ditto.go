package algo

import (
	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// DittoConfig is Ditto's setting, the config's algorithm.ditto.
type DittoConfig struct {
	// Lambda is λ in the personal objective f(v) + λ/2‖v − w‖², the personal models' pull
	// towards the global model; default 1, the official code's --lam in its Fashion-MNIST
	// scripts (litian96/ditto, run_fashion_clean_ditto_lam1.sh; the paper tunes λ per
	// dataset, §5).
	Lambda float64 `mapstructure:"lambda" json:"lambda"`
}

// Default is Ditto's default setting.
func (DittoConfig) Default() DittoConfig { return DittoConfig{Lambda: 1} }

// Validate reports a value Ditto cannot run with, naming its config key.
func (c DittoConfig) Validate() error {
	k := &check.Checker{}
	k.Real("algorithm.ditto.lambda", c.Lambda, 0, check.Inf, "[]")
	return k.Err()
}

// Ditto keeps, beside the shared model w that trains and is averaged exactly as FedAvg's, a
// personal model v per client, trained on f(v) + λ/2‖v − w_global‖² and evaluated (Li, Hu,
// Beirami and Smith, "Ditto: Fair and Robust Federated Learning Through Personalization",
// ICML 2021, Alg. 1; the objective is the paper's Eq. 2, h_k(v; w) = F_k(v) + λ/2‖v − w*‖²).
// w_global is the global model the round started from, so the personal step is
//
//	v ← v − η (∇f(v) + λ (v − w_global)),
//
// and the shared step w ← w − η ∇f(w), as the official code (litian96/ditto,
// flearn/trainers_MTL/ditto.py) takes both. The model is model.Join(w, v) (twin.go): v
// starts as a copy of the initial global model, is kept by its client between rounds
// (with its BatchNorm statistics, if any), and is what the client predicts with.
//
// Deviations: both models take the run's local optimizer (its momentum and weight decay;
// the paper and the official code take plain SGD, which is the run's default) and the same
// batches, for the configured epochs; the official code also runs both on the same batch
// per iteration, while the paper's Alg. 1 lets v take its own number of local iterations s.
// The reported training loss is f(w) + f(v) (the penalty not included). The round's
// clients are drawn uniformly and the shared model averaged by m_i/M, as every algorithm
// here; the official code draws the clients with probability ∝ their sample counts
// (--sampling 2, fedbase.py select_clients) and averages their updates uniformly
// (simple_average), and takes --local_iters batches per round, not epochs
// (docs/fidelity.md, ditto).
type Ditto struct {
	DittoConfig
	twins
}

// Name is "ditto".
func (*Ditto) Name() string { return "ditto" }

// PrepareHooks join the personal model v beside every model the run builds (Wrap).
func (d *Ditto) PrepareHooks() fl.PrepareHooks { return fl.PrepareHooks{Wrap: d.wrap} }

// TrainHooks train both models (Loss), v pulled towards the global model (Penalty); every
// training sample trains the global copy and the personal model (Passes 2).
func (d *Ditto) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Loss: d.Loss, Penalty: d.Penalty, Passes: 2}
}

// EvalHooks predict with the personal model.
func (d *Ditto) EvalHooks() fl.EvalHooks { return fl.EvalHooks{Predict: d.predict} }

// Loss is f(w) + f(v) on the batch, each the mean cross-entropy over the client's real
// samples.
func (d *Ditto) Loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	w, v := part(s, m, 0), part(s, m, 1)
	if w == nil {
		return nil
	}
	return s.Add(fl.MeanCrossEntropy(s, w.Forward(s, b.X, pass), b.Y, b.Mask), fl.MeanCrossEntropy(s, v.Forward(s, b.X, pass), b.Y, b.Mask))
}

// Penalty is λ/2 Σ_clients ‖v − w_global‖² over the personal parameters, each against its
// shared twin's global value; the shared parameters get no penalty.
func (d *Ditto) Penalty(s *cuda.Scope, params, global []*cuda.Tensor) *cuda.Tensor {
	at := make(map[*cuda.Tensor]int, len(params))
	for i, p := range params {
		at[p] = i
	}
	var sum *cuda.Tensor
	for _, p := range params {
		j, ok := at[d.twinOf[p]]
		if !ok { // a shared parameter, or a personal one whose twin this phase does not train
			continue
		}
		diff := s.Sub(p, global[j])
		t := s.Sum(s.Mul(diff, diff), false)
		if sum == nil {
			sum = t
		} else {
			sum = s.Add(sum, t)
		}
	}
	if sum == nil {
		return s.Zeros(params[0].DType(), params[0].Device())
	}
	return s.MulScalar(sum, d.Lambda/2)
}
