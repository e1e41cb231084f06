package fl

import "pfl/engine/model"

// FedBABU trains and averages the body with the head frozen at its random initialization,
// then fine-tunes the whole model, body and head, on each client's data before evaluating
// it (Oh et al., "FedBABU: Towards Enhanced Representation for Federated Image
// Classification", ICLR 2022; its official code, jhoon-oh/FedBABU analysis.ipynb,
// personalizes with one SGD over body_params and head_params at the same lr). As in
// FedPerfix's code (system/flcore/clients/clientbabu.py: test_metrics unfreezes the head,
// and train_one_step steps an SGD over model.parameters(), then restores the model), the
// head is kept per client and the fine-tuning is not kept; FineTuneSteps is its length in
// batches (0: one epoch; the official --fine_tuning_steps 1). PFLlib's FedBABU fine-tunes
// body and head too (clientbabu.py fine_tune, which_module ['base', 'head']).
type FedBABU struct{ FineTuneSteps int }

// Name is "fedbabu".
func (FedBABU) Name() string { return "fedbabu" }

// Personal is true for the head (which stays at its initialization during training).
func (FedBABU) Personal(p *model.Param) bool { return p.Role == model.RoleHead }

// Phases train everything but the head.
func (FedBABU) Phases(epochs int) []Phase {
	return []Phase{{Epochs: epochs, Train: func(p *model.Param) bool { return p.Role != model.RoleHead }}}
}

// FineTune trains every parameter, body and head (the official codes' fine-tuning step).
func (f FedBABU) FineTune() Phase {
	return Phase{Epochs: 1, Steps: f.FineTuneSteps, Train: allParams}
}
