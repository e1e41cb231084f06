package fl_test

import (
	"errors"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
)

// failAt is FedAvg whose local optimizer fails at one step of one round (both 1-based, as
// the console counts rounds), the way pFedGP's step fails when its embeddings diverge.
type failAt struct {
	fl.Strategy
	round, step int
}

func (f failAt) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Optimizer: func(_ int, run fl.SGDConfig) fl.Optimizer { return &failingSGD{Optimizer: fl.NewSGD(run), at: f} }}
}

// failingSGD counts rounds by Reset (called at the start of every round) and steps by Step.
type failingSGD struct {
	fl.Optimizer
	at           failAt
	round, steps int
}

func (o *failingSGD) Reset(s *cuda.Scope) {
	o.round, o.steps = o.round+1, 0
	o.Optimizer.Reset(s)
}

func (o *failingSGD) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	o.steps++
	if o.round == o.at.round && o.steps == o.at.step {
		s.Fail(errors.New("injected failure"))
		return
	}
	o.Optimizer.Step(s, params, grads, active)
}

// TestStepErrorsNumberRoundsFromOne: an error in the second round's second step names
// round 2 and step 2, as the console's "round 2/3" does, not the 0-based indices.
func TestStepErrorsNumberRoundsFromOne(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	cfg := fl.Config{Rounds: 3, PerRound: 2, Epochs: 2, Batch: 8, LR: 0.01, Seed: 1, Device: cuda.CPU, Workers: 1}
	r, err := fl.New(cfg, failAt{algo.FedAvg(), 2, 2}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Train()
	if err == nil || !strings.Contains(err.Error(), "round 2 step 2 of ") || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("error %v, want one naming round 2 step 2", err)
	}
	if len(r.History) != 1 {
		t.Fatalf("%d rounds in the history, want the 1 before the failing round", len(r.History))
	}
}
