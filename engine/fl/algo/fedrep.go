package algo

import (
	"fmt"

	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// FedRepConfig is FedRep's setting, the config's algorithm.fedrep.
type FedRepConfig struct {
	// RepEpochs is how many of each round's train.epochs train the body (the shared
	// representation), after train.epochs − rep_epochs epochs of the head; default 1,
	// Collins et al.'s code (lgcollins/FedRep, --local_rep_ep; models/Update.py trains
	// local_ep − local_rep_ep head epochs, then local_rep_ep body epochs). fedrep needs
	// 1 <= rep_epochs < train.epochs, so that both phases train.
	RepEpochs int `mapstructure:"rep_epochs" json:"rep_epochs"`
}

// Default is FedRep's default setting.
func (FedRepConfig) Default() FedRepConfig { return FedRepConfig{RepEpochs: 1} }

// Validate reports a value FedRep cannot run with, naming its config key.
func (c FedRepConfig) Validate() error {
	k := &check.Checker{}
	k.AtLeast("algorithm.fedrep.rep_epochs", int64(c.RepEpochs), 1)
	return k.Err()
}

// checkFedRep is fedrep's check across keys (its registry entry): both phases must train.
func checkFedRep(_ fl.Settings, own fl.Section, epochs int) error {
	if c := own.(FedRepConfig); c.RepEpochs >= epochs {
		return fmt.Errorf("algorithm.fedrep.rep_epochs: %d, but train.epochs is %d: fedrep trains train.epochs − rep_epochs head epochs, then rep_epochs body epochs; want rep_epochs < train.epochs", c.RepEpochs, epochs)
	}
	return nil
}

// FedRep keeps the head personal and, every round, first trains the head with the body
// frozen, then the body with the head frozen (Collins et al., "Exploiting Shared
// Representations for Personalized Federated Learning", ICML 2021, Alg. 1): of the run's
// local epochs E, E − RepEpochs train the head and RepEpochs the body, as the authors'
// code (lgcollins/FedRep models/Update.py LocalUpdate.train: head_eps = local_ep −
// local_rep_ep, then local_rep_ep epochs of the representation; its CIFAR-10 script runs
// --local_ep 11 --local_rep_ep 1, the other scripts 15 and 5, the argparse defaults 5 and
// 1). The official code keeps one SGD for both phases; each phase's fresh optimizer here
// is the same update, since the phases train disjoint parameters and a parameter's
// momentum starts at its first step either way.
//
// Other codes split otherwise: PFLlib's clientrep.py runs --plocal_epochs head epochs and
// then --local_epochs body epochs (so a round is their sum), and FedPerfix's official
// preset "FedRep" is FedAvg with a local head (fedper here).
type FedRep struct{ FedRepConfig }

// Name is "fedrep".
func (FedRep) Name() string { return "fedrep" }

// Personal is true for the head.
func (FedRep) Personal(p *model.Param) bool { return p.Role == model.RoleHead }

// TrainHooks train in FedRep's two phases.
func (f FedRep) TrainHooks() fl.TrainHooks { return fl.TrainHooks{Phases: f.Phases} }

// Phases are the head phase (epochs − RepEpochs epochs), then the body phase (RepEpochs
// epochs); a phase of no epochs is left out.
func (f FedRep) Phases(epochs int) []fl.Phase {
	isHead := func(p *model.Param) bool { return p.Role == model.RoleHead }
	var out []fl.Phase
	if head := epochs - f.RepEpochs; head > 0 {
		out = append(out, fl.Phase{Epochs: head, Train: isHead})
	}
	if f.RepEpochs > 0 {
		out = append(out, fl.Phase{Epochs: f.RepEpochs, Train: func(p *model.Param) bool { return !isHead(p) }})
	}
	return out
}
