package algo

import (
	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// FedProx is FedAvg with the proximal term μ/2·‖θ − θ_global‖² added to each client's
// local loss (Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020).
type FedProx struct{ Mu float64 }

// Name is "fedprox".
func (FedProx) Name() string { return "fedprox" }

// Personal is false: everything is averaged, as in FedAvg.
func (FedProx) Personal(*model.Param) bool { return false }

// TrainHooks add the proximal term to the local loss.
func (f FedProx) TrainHooks() fl.TrainHooks { return fl.TrainHooks{Penalty: f.Penalty} }

// Penalty is μ/2 Σ_clients ‖θ_k − θ_global‖².
func (f FedProx) Penalty(s *cuda.Scope, params, global []*cuda.Tensor) *cuda.Tensor {
	var total *cuda.Tensor
	for i, p := range params {
		d := s.Sum(s.Pow(s.Sub(p, global[i]), 2), false)
		if total == nil {
			total = d
		} else {
			total = s.Add(total, d)
		}
	}
	return s.MulScalar(total, f.Mu/2)
}
