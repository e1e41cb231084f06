package fl_test

import (
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// Phased local training (FedRep's split, FedBABU's frozen head) and fine-tuning before
// evaluation.

// headOnly trains only the head, in one phase.
type headOnly struct{ fl.Strategy }

func (headOnly) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Phases: func(epochs int) []fl.Phase {
		return []fl.Phase{{Epochs: epochs, Train: func(p *model.Param) bool { return p.Role == model.RoleHead }}}
	}}
}

func TestPhasesTrainOnlyTheirParameters(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	cfg := fl.Config{Rounds: 2, PerRound: 4, Batch: 16, LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Seed: 1, Device: cuda.CPU}
	r, err := fl.New(cfg, headOnly{algo.FedAvg()}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := map[string][]float64{}
	for _, p := range r.Global().Params().List {
		before[p.Name], _ = p.T.Float64s()
	}
	if _, err := r.Round(0); err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Global().Params().List {
		after, _ := p.T.Float64s()
		changed := false
		for i := range after {
			changed = changed || after[i] != before[p.Name][i]
		}
		if changed != (p.Role == model.RoleHead) {
			t.Errorf("%s (%s) changed=%v", p.Name, p.Role, changed)
		}
	}
}

func TestFedBABUKeepsItsHeadsAndDoesNotKeepFineTuning(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	cfg := fl.Config{Rounds: 2, PerRound: 2, Batch: 16, LR: 0.1, Seed: 1, Device: cuda.CPU, EvalEvery: 1}
	r, err := fl.New(cfg, algo.FedBABU{FedBABUConfig: algo.FedBABUConfig{FineTuneEpochs: 1, FineTuneSteps: 2}}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var heads [][]float64
	for i, p := range r.Global().Params().List {
		if p.Role == model.RoleHead {
			v, _ := r.Store()[i].Float64s()
			heads = append(heads, v)
		}
	}
	if _, err := r.Train(); err != nil {
		t.Fatal(err)
	}
	j := 0
	for i, p := range r.Global().Params().List {
		if p.Role != model.RoleHead {
			continue
		}
		v, _ := r.Store()[i].Float64s()
		for e := range v {
			if v[e] != heads[j][e] {
				t.Fatalf("%s changed in the store: training or fine-tuning leaked into it", p.Name)
			}
		}
		j++
	}
}

// TestFedBABUFineTunesBodyAndHead: FedBABU's fine-tuning before evaluation steps every
// parameter, body and head, as FedPerfix's clientbabu.py (an SGD over model.parameters()
// with the head unfrozen) and PFLlib's fine_tune (['base', 'head']) do, and an evaluation
// leaves the global model as it was (the fine-tuning is not kept).
func TestFedBABUFineTunesBodyAndHead(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	cfg := fl.Config{Rounds: 1, PerRound: 2, Batch: 16, LR: 0.1, Seed: 1, Device: cuda.CPU}
	f := algo.FedBABU{FedBABUConfig: algo.FedBABUConfig{FineTuneEpochs: 1, FineTuneSteps: 1}}
	r, err := fl.New(cfg, f, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := cuda.NewScope()
	defer s.Close()
	ids := []int{1, 3}
	r.Load(s, r.EvalM(), ids)
	snapshot := func(m model.Model) map[string][]float64 {
		out := map[string][]float64{}
		for _, p := range m.Params().List {
			out[p.Name] = fltest.Values(t, p.T)
		}
		return out
	}
	before, global := snapshot(r.EvalM()), snapshot(r.Global())
	if err := r.TrainPhase(s, r.EvalM(), ids, 0, fl.FineTunePhase, *f.EvalHooks().FineTune); err != nil {
		t.Fatal(err)
	}
	roles := map[model.Role]bool{}
	for _, p := range r.EvalM().Params().List {
		if p.Buffer {
			continue
		}
		if slices.Equal(fltest.Values(t, p.T), before[p.Name]) {
			t.Errorf("%s (%s) did not move in the fine-tuning step", p.Name, p.Role)
		}
		roles[p.Role] = true
	}
	if !roles[model.RoleHead] || len(roles) < 2 {
		t.Fatalf("roles checked %v: want the head and the body", roles)
	}
	if _, err := r.Evaluate(); err != nil {
		t.Fatal(err)
	}
	for name, v := range snapshot(r.Global()) {
		if !slices.Equal(v, global[name]) {
			t.Errorf("%s of the global model changed in an evaluation", name)
		}
	}
}

// TestFedBABUFineTuneLength: algorithm.fedbabu sets the fine-tuning phase the registry's
// fedbabu runs: FedPerfix's one step by default, PFLlib's 10 whole epochs when set.
func TestFedBABUFineTuneLength(t *testing.T) {
	for _, c := range []struct {
		epochs, steps int
	}{{1, 1}, {10, 0}, {2, 3}} {
		s := fl.DefaultSettings()
		s.Name = "fedbabu"
		if c.epochs != 1 || c.steps != 1 { // else the defaults
			fl.EditOwn(&s, func(o *algo.FedBABUConfig) { o.FineTuneEpochs, o.FineTuneSteps = c.epochs, c.steps })
		}
		ph := s.Strategy().(fl.EvalStage).EvalHooks().FineTune
		if ph == nil {
			t.Fatal("fedbabu does not fine-tune")
		}
		if ph.Epochs != c.epochs || ph.Steps != c.steps {
			t.Errorf("fine_tune_epochs %d, fine_tune_steps %d: phase of %d epochs, %d steps", c.epochs, c.steps, ph.Epochs, ph.Steps)
		}
	}
}
