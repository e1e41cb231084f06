// Package fl is pfl's federated round loop: sample clients, train the K sampled clients
// together as one client-stacked model, aggregate the shared part, keep the personal parts
// with their clients, and evaluate every client's personalized model.
//
// A Strategy decides which parameters are personal (by role, never by name) and may add
// to the local objective; the loop drives everything else. One file per algorithm.
package fl

import (
	"pfl/cuda"
	"pfl/engine/model"
)

// Strategy is a federated algorithm.
type Strategy interface {
	// Name is the algorithm's name as configs spell it.
	Name() string
	// Personal reports whether p stays with its client between rounds instead of being
	// aggregated. It is called once per parameter when a run starts.
	Personal(p *model.Param) bool
}

// Regularizer is a Strategy that adds a term to every client's local loss.
type Regularizer interface {
	Strategy
	// Penalty returns the added loss for the stacked parameters params (summed over
	// clients), given the global values the round started from (one row, broadcast).
	Penalty(s *cuda.Scope, params, global []*cuda.Tensor) *cuda.Tensor
}

// Phase is part of a client's local training: Epochs epochs (at most Steps steps when
// Steps > 0) in which only the parameters Train selects are updated.
type Phase struct {
	Epochs int
	Steps  int
	Train  func(p *model.Param) bool
}

// Phased is a Strategy whose local training runs in phases (FedRep: the head, then the
// body). epochs is the configured number of local epochs.
type Phased interface {
	Strategy
	Phases(epochs int) []Phase
}

// FineTuner is a Strategy that fine-tunes each client's model on its own training data
// before it is evaluated, without keeping the change (FedBABU: the head).
type FineTuner interface {
	Strategy
	FineTune() Phase
}

// allParams trains every parameter.
func allParams(*model.Param) bool { return true }

// roleSet is the shared shape of the role-based algorithms.
type roleSet struct {
	name  string
	roles []model.Role
}

func (r roleSet) Name() string { return r.name }

func (r roleSet) Personal(p *model.Param) bool {
	for _, role := range r.roles {
		if p.Role == role {
			return true
		}
	}
	return false
}
