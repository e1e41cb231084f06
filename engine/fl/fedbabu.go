package fl

import "pfl/engine/model"

// FedBABU trains and averages the body with the head frozen at its random initialization,
// then fine-tunes the head on each client's data before evaluating it (Oh et al., "FedBABU:
// Towards Enhanced Representation for Federated Image Classification", ICLR 2022). As in
// FedPerfix's code, the head is kept per client and the fine-tuning is not kept;
// FineTuneSteps is its length in batches (0: one epoch).
type FedBABU struct{ FineTuneSteps int }

// Name is "fedbabu".
func (FedBABU) Name() string { return "fedbabu" }

// Personal is true for the head (which stays at its initialization during training).
func (FedBABU) Personal(p *model.Param) bool { return p.Role == model.RoleHead }

// Phases train everything but the head.
func (FedBABU) Phases(epochs int) []Phase {
	return []Phase{{Epochs: epochs, Train: func(p *model.Param) bool { return p.Role != model.RoleHead }}}
}

// FineTune trains the head only.
func (f FedBABU) FineTune() Phase {
	return Phase{Epochs: 1, Steps: f.FineTuneSteps, Train: func(p *model.Param) bool { return p.Role == model.RoleHead }}
}
