package fl_test

// FedPerfix's protocol and resource table, as the framework runs and counts them.

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

// TestFedPerfixResourcesOnViTS16: on ViT-S/16 at 100 classes with FedPerfix's official
// CIFAR-100 preset (prefix adapters of width 256 in all 12 blocks; adapters, head and the
// whole of block 11 local) the counts are the hand counts: adapters 12 × (384·256 + 256 +
// 256·768 + 768) = 3,551,232; block 11 12·384 + 384·1152 + 1152 + 384·384 + 384 +
// 384·1536 + 1536 + 1536·384 + 384 = 1,774,464; head 384·100 + 100 = 38,500; local
// 5,364,196 of 25,255,396; one client sends and receives the other 19,891,200 per round.
func TestFedPerfixResourcesOnViTS16(t *testing.T) {
	strat := algo.FedPerfix(fl.Options{LocalBlocks: []int{11}})
	s, err := fl.Shape(strat, model.Spec{Preset: "vit-s16", Classes: 100})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(s, 1, cuda.CPU, cuda.Float32, nil) // shapes only
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	personal := make([]bool, len(m.Params().List))
	for i, p := range m.Params().List {
		personal[i] = strat.Personal(p)
	}
	got := fl.CountResources(m, 1, personal)
	want := fl.Resources{StoredParams: 25_255_396, PersonalParams: 5_364_196, UpParams: 19_891_200, DownParams: 19_891_200,
		ForwardMACs: m.MACs(), TrainFLOPs: 6 * m.MACs()}
	if got != want {
		t.Fatalf("resources %+v, want %+v", got, want)
	}
}

// TestFedPerfixProtocolEvaluatesBeforeAggregation: under the fedperfix protocol every
// client is evaluated before the server update, as FedPerfix's official code tests every
// client before aggregate_parameters: a trained client with its trained model (as it was
// before the server averaged it), every other client with the global shared part the round
// started from, i.e. the previous round's (the initial one in round 0), and its own
// personal part. Under fedtp every client sees the new global part, so the two protocols
// differ in round 1 for the trained clients and for the others.
func TestFedPerfixProtocolEvaluatesBeforeAggregation(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 6, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := func(protocol fl.EvalProtocol) fl.Config {
		return fl.Config{Rounds: 2, PerRound: 2, Epochs: 2, Batch: 8, LR: 0.1, Seed: 5, Device: cuda.CPU, DType: cuda.Float64,
			EvalEvery: 1, Protocol: protocol}
	}
	build := fltest.ConvnetAs(16, 1, 4, false, cuda.Float64)
	history := map[fl.EvalProtocol][]fl.RoundMetrics{}
	for _, protocol := range []fl.EvalProtocol{fl.EvalFedTP, fl.EvalFedPerfix} {
		r, err := fl.New(cfg(protocol), algo.FedPer(), st.Fed, st.Train, st.Test, build)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if history[protocol], err = r.Train(); err != nil {
			t.Fatal(err)
		}
	}
	fedtp, fedperfix := history[fl.EvalFedTP], history[fl.EvalFedPerfix]
	if !slices.Equal(fedtp[1].Clients, fedperfix[1].Clients) {
		t.Fatalf("the protocols sampled %v and %v", fedtp[1].Clients, fedperfix[1].Clients)
	}

	// the references: the initial models (round 0's global part), and round 0's trained
	// clients' trained rows, rebuilt by training again from the same start (same streams)
	// without aggregating
	again, err := fl.New(cfg(fl.EvalFedPerfix), algo.FedPer(), st.Fed, st.Train, st.Test, build)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	initial, err := again.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	s := cuda.NewScope()
	defer s.Close()
	var met fl.RoundMetrics
	trained0 := fedperfix[0].Clients
	if _, _, err := again.LocalTrain(s, again.Stacked(), trained0, nil, 0, &met); err != nil {
		t.Fatal(err)
	}
	e, err := again.EvalStackedRows(trained0)
	if err != nil {
		t.Fatal(err)
	}

	same := func(a, b fl.EvalResult, c int) bool { return a.Correct[c] == b.Correct[c] && a.Loss[c] == b.Loss[c] }
	for c := range initial.Correct {
		got0, got1 := *fedperfix[0].Eval, *fedperfix[1].Eval
		if i := slices.Index(trained0, c); i >= 0 {
			if got0.Correct[c] != int(e.Correct[i]) || got0.Loss[c] != e.Loss[i]/e.Count[i] {
				t.Errorf("round 0, trained client %d: %d correct (loss %g) under fedperfix, its trained model gets %g (%g)",
					c, got0.Correct[c], got0.Loss[c], e.Correct[i], e.Loss[i]/e.Count[i])
			}
		} else if !same(got0, initial, c) {
			t.Errorf("round 0, client %d (not trained): %d correct (loss %g), the initial model gets %d (%g)",
				c, got0.Correct[c], got0.Loss[c], initial.Correct[c], initial.Loss[c])
		}
		// round 1: a client that did not train keeps its personal part, and sees round 0's
		// global part: fedtp's round-0 evaluation of it
		if !slices.Contains(fedperfix[1].Clients, c) && !same(got1, *fedtp[0].Eval, c) {
			t.Errorf("round 1, client %d (not trained): %d correct (loss %g), with round 0's global part %d (%g)",
				c, got1.Correct[c], got1.Loss[c], fedtp[0].Eval.Correct[c], fedtp[0].Eval.Loss[c])
		}
	}
	// the test can tell the protocols apart: in round 1 they differ for a trained client and
	// for a client that did not train
	differ := map[bool]bool{}
	for c := range initial.Correct {
		trained := slices.Contains(fedperfix[1].Clients, c)
		differ[trained] = differ[trained] || !same(*fedtp[1].Eval, *fedperfix[1].Eval, c)
	}
	if !differ[true] || !differ[false] {
		t.Errorf("round 1's results differ between the protocols for trained clients: %v, for the others: %v; want both", differ[true], differ[false])
	}
}
