package algo

import (
	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// FedBABUConfig is FedBABU's setting, the config's algorithm.fedbabu: how long each client
// fine-tunes before it is evaluated.
type FedBABUConfig struct {
	// FineTuneEpochs is the fine-tuning's length in passes over the client's training data;
	// default 1. PFLlib fine-tunes 10 epochs, once, after the last round (serverbabu.py,
	// clientbabu.py fine_tune, --fine_tuning_epochs 10).
	FineTuneEpochs int `mapstructure:"fine_tune_epochs" json:"fine_tune_epochs"`
	// FineTuneSteps stops the fine-tuning after this many steps; 0 runs every step of its
	// epochs. Default 1, FedPerfix's code (--fine_tuning_steps 1, clientbabu.py
	// train_one_step).
	FineTuneSteps int `mapstructure:"fine_tune_steps" json:"fine_tune_steps"`
}

// Default is FedBABU's default setting: one step, as FedPerfix's code.
func (FedBABUConfig) Default() FedBABUConfig {
	return FedBABUConfig{FineTuneEpochs: 1, FineTuneSteps: 1}
}

// Validate reports a value FedBABU cannot run with, naming its config key.
func (c FedBABUConfig) Validate() error {
	k := &check.Checker{}
	k.AtLeast("algorithm.fedbabu.fine_tune_epochs", int64(c.FineTuneEpochs), 1)
	k.AtLeast("algorithm.fedbabu.fine_tune_steps", int64(c.FineTuneSteps), 0)
	return k.Err()
}

// FedBABU trains and averages the body with the head frozen at its random initialization,
// then fine-tunes the whole model, body and head, on each client's data before evaluating
// it (Oh et al., "FedBABU: Towards Enhanced Representation for Federated Image
// Classification", ICLR 2022; its official code, jhoon-oh/FedBABU analysis.ipynb,
// personalizes with one SGD over body_params and head_params at the same lr). As in
// FedPerfix's code (system/flcore/clients/clientbabu.py: test_metrics unfreezes the head,
// and train_one_step steps an SGD over model.parameters(), then restores the model), the
// head is kept per client and the fine-tuning is not kept; FedBABUConfig sets its length
// (FedPerfix's one step by default). PFLlib's FedBABU fine-tunes body and head too
// (clientbabu.py fine_tune, which_module ['base', 'head']), for 10 epochs, but only once,
// after the last round; its per-round evaluations are not fine-tuned.
type FedBABU struct{ FedBABUConfig }

// Name is "fedbabu".
func (FedBABU) Name() string { return "fedbabu" }

// Personal is true for the head (which stays at its initialization during training).
func (FedBABU) Personal(p *model.Param) bool { return p.Role == model.RoleHead }

// TrainHooks train everything but the head.
func (FedBABU) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Phases: func(epochs int) []fl.Phase {
		return []fl.Phase{{Epochs: epochs, Train: func(p *model.Param) bool { return p.Role != model.RoleHead }}}
	}}
}

// EvalHooks fine-tune every parameter, body and head, before evaluation (the official
// codes' fine-tuning step).
func (f FedBABU) EvalHooks() fl.EvalHooks {
	return fl.EvalHooks{FineTune: &fl.Phase{Epochs: f.FineTuneEpochs, Steps: f.FineTuneSteps, Train: fl.AllParams}}
}
