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
