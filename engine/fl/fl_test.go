package fl_test

import (
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

func TestWeightsAndWeightedMean(t *testing.T) {
	w := fl.Weights([]int{1, 3})
	if w[0] != 0.25 || w[1] != 0.75 {
		t.Fatalf("weights %v", w)
	}
	s := cuda.NewScope()
	defer s.Close()
	x := cuda.FromSlice(s, cuda.CPU, []float64{1, 2, 5, 10}, 2, 2)
	got, err := fl.WeightedMean(s, x, cuda.FromSlice(s, cuda.CPU, w)).Float64s()
	if err != nil || s.Err() != nil || got[0] != 0.25*1+0.75*5 || got[1] != 0.25*2+0.75*10 {
		t.Fatalf("weighted mean %v, %v %v", got, err, s.Err())
	}
}

func TestStrategiesSplitByRole(t *testing.T) {
	vit, _ := model.Build(model.Spec{Preset: "tiny-vit", Depth: 2}, 1, cuda.CPU, cuda.Float32, nil)
	cnn, _ := model.Build(model.Spec{Preset: "convnet-bn"}, 1, cuda.CPU, cuda.Float32, nil)
	cases := []struct {
		s     fl.Strategy
		m     model.Model
		roles []model.Role // exactly these are personal
	}{
		{algo.FedAvg(), vit, nil},
		{algo.FedProx{Mu: 0.01}, vit, nil},
		{algo.FedPer(), vit, []model.Role{model.RoleHead}},
		{algo.VanillaPersonalizedT(), vit, []model.Role{model.RoleAttnQKV}},
		{algo.VanillaAttention(), vit, []model.Role{model.RoleAttnQKV, model.RoleAttnOut, model.RoleHead}},
		{algo.FedBN(), vit, []model.Role{model.RoleNorm}},
		{algo.FedBN(), cnn, []model.Role{model.RoleNorm, model.RoleNormStats}},
		{algo.Local(), cnn, model.Roles()},
		{algo.FedRep{}, vit, []model.Role{model.RoleHead}},
		{algo.FedBABU{}, vit, []model.Role{model.RoleHead}},
	}
	for _, c := range cases {
		personal := 0
		for _, p := range c.m.Params().List {
			want := false
			for _, r := range c.roles {
				want = want || p.Role == r
			}
			if got := c.s.Personal(p); got != want {
				t.Errorf("%s: %s personal=%v, want %v", c.s.Name(), p.Name, got, want)
			}
			if want {
				personal++
			}
		}
		if len(c.roles) > 0 && personal == 0 {
			t.Errorf("%s: no parameter of roles %v in the model", c.s.Name(), c.roles)
		}
	}
}

func TestStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	for _, strat := range []func() fl.Strategy{algo.FedPer, algo.FedBN, func() fl.Strategy { return algo.FedProx{Mu: 0.1} }, func() fl.Strategy { return &algo.FedRoD{} }} {
		t.Run(strat().Name(), func(t *testing.T) {
			cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
				Augment: data.Augment{Pad: 2, Flip: true}, Seed: 11, Device: cuda.CPU, DType: cuda.Float64}
			// float64: with BatchNorm over a few real samples, float32 rounding differences
			// between grouped and plain convolutions grow to 1e-3 within two epochs
			fltest.StackedEqualsSequential(t, st, cfg, strat, fltest.ConvnetAs(16, 1, 4, true, cuda.Float64))
		})
	}
}

func TestStackedEqualsSequentialWithDropout(t *testing.T) {
	// a tiny ViT with dropout 0.1: equal only because each client draws from its own stream
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		return model.Build(fltest.VitSpec(16, 2, 8, 24, nil), k, cuda.CPU, cuda.Float64, g)
	}
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	fltest.StackedEqualsSequential(t, st, cfg, algo.VanillaPersonalizedT, vit)
}

// TestRoundLeavesNoHandles: after the first round (which makes the run's step states),
// rounds leave the live tensors and generators unchanged, and Close frees all of the
// run's (FedRep: two phases, so two step states; noise: the plan's own streams).
func TestRoundLeavesNoHandles(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1, NoiseMax: 0.2})
	tensors, gens := cuda.LiveTensors(), cuda.LiveGenerators()
	r, err := fl.New(fl.Config{Rounds: 3, PerRound: 2, Epochs: 2, Batch: 16, Momentum: 0.9, Seed: 1, Device: cuda.CPU, EvalEvery: 1}, algo.FedRep{FedRepConfig: algo.FedRepConfig{RepEpochs: 1}}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Round(0); err != nil {
		t.Fatal(err)
	}
	before, beforeGens := cuda.LiveTensors(), cuda.LiveGenerators()
	for round := 1; round < 3; round++ {
		if _, err := r.Round(round); err != nil {
			t.Fatal(err)
		}
	}
	if after, g := cuda.LiveTensors(), cuda.LiveGenerators(); after != before || g != beforeGens {
		t.Fatalf("live tensors %d and generators %d after two more rounds, %d and %d before", after, g, before, beforeGens)
	}
	r.Close()
	if after, g := cuda.LiveTensors(), cuda.LiveGenerators(); after != tensors || g != gens {
		t.Fatalf("live tensors %d and generators %d after Close, %d and %d before New", after, g, tensors, gens)
	}
}

func TestBadConfigs(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1, HoldOut: 0.25})
	for _, c := range []struct {
		cfg  fl.Config
		want string
	}{
		{fl.Config{Rounds: 0, PerRound: 2}, "Config.Rounds: 0"},
		{fl.Config{Rounds: 1, PerRound: 4}, "3 clients can train"},
		{fl.Config{Rounds: 1, PerRound: 1, LR: -1}, "Config.LR: -1"},
		{fl.Config{Rounds: 1, PerRound: 1, Momentum: 1}, "Config.Momentum: 1"},
	} {
		c.cfg.Device = cuda.CPU
		if _, err := fl.New(c.cfg, algo.FedAvg(), st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error mentioning %q", c.cfg, err, c.want)
		}
	}
}

// TestCheckNamesTheCallersKeys: Check names a setting as the caller's keys do, and by its
// field where they give no name.
func TestCheckNamesTheCallersKeys(t *testing.T) {
	keys := fl.Keys{LR: "train.lr", Sequential: "train.sequential", Workers: "train.workers"}
	for _, c := range []struct {
		cfg  fl.Config
		want string
	}{
		{fl.Config{Rounds: 1, Epochs: 1, Batch: 1, LR: -1, Protocol: fl.EvalFedTP}, "train.lr: -1"},
		{fl.Config{Rounds: 1, Epochs: 1, Batch: 1, LR: 1, Protocol: fl.EvalFedTP, Workers: 2, Sequential: true}, "train.workers: 2, but train.sequential trains"},
		{fl.Config{Rounds: 1, Epochs: 1, Batch: 1, LR: 1, Protocol: fl.EvalFedTP, Stack: -1}, "Config.Stack: -1"},
		{fl.Config{Rounds: 1, Epochs: 1, Batch: 1, LR: 1, Protocol: "x"}, "Config.Protocol"},
	} {
		if err := c.cfg.Check(keys); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error starting %q", c.cfg, err, c.want)
		}
	}
}

func TestNaNLossNamesTheClient(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	// a learning rate this large diverges within a few steps
	cfg := fl.Config{Rounds: 5, PerRound: 2, Epochs: 3, Batch: 8, LR: 1e6, Seed: 1, Device: cuda.CPU}
	r, err := fl.New(cfg, algo.FedAvg(), st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Train()
	if err == nil || !strings.Contains(err.Error(), "client(s) [") || !strings.Contains(err.Error(), "round ") {
		t.Fatalf("error %v, want one naming the round and the client", err)
	}
	t.Log(err)
}

func TestModelThatCannotTakeTheDataIsAnError(t *testing.T) {
	// 16×16 images into a ConvNet built for 32×32: a clear error, not a crash
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	r, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU}, algo.FedAvg(), st.Fed, st.Train, st.Test, fltest.Convnet(32, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Round(0); err == nil || !strings.Contains(err.Error(), "convnet: input") {
		t.Fatalf("error %v, want the model's input-shape error", err)
	}
}
