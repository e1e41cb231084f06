package fl

import "pfl/engine/model"

// FedRep keeps the head personal and, every round, first trains the head with the body
// frozen, then the body with the head frozen (Collins et al., "Exploiting Shared
// Representations for Personalized Federated Learning", ICML 2021). HeadEpochs is the
// head phase's length (0: the configured local epochs).
type FedRep struct{ HeadEpochs int }

// Name is "fedrep".
func (FedRep) Name() string { return "fedrep" }

// Personal is true for the head.
func (FedRep) Personal(p *model.Param) bool { return p.Role == model.RoleHead }

// Phases are the head phase, then the body phase.
func (f FedRep) Phases(epochs int) []Phase {
	head := f.HeadEpochs
	if head == 0 {
		head = epochs
	}
	isHead := func(p *model.Param) bool { return p.Role == model.RoleHead }
	return []Phase{{Epochs: head, Train: isHead}, {Epochs: epochs, Train: func(p *model.Param) bool { return !isHead(p) }}}
}
