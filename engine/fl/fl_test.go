package fl

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

func TestWeightsAndWeightedMean(t *testing.T) {
	w := Weights([]int{1, 3})
	if w[0] != 0.25 || w[1] != 0.75 {
		t.Fatalf("weights %v", w)
	}
	s := cuda.NewScope()
	defer s.Close()
	x := cuda.FromSlice(s, cuda.CPU, []float64{1, 2, 5, 10}, 2, 2)
	got, err := WeightedMean(s, x, cuda.FromSlice(s, cuda.CPU, w)).Float64s()
	if err != nil || s.Err() != nil || got[0] != 0.25*1+0.75*5 || got[1] != 0.25*2+0.75*10 {
		t.Fatalf("weighted mean %v, %v %v", got, err, s.Err())
	}
}

func TestStrategiesSplitByRole(t *testing.T) {
	vit, _ := model.Build(model.Spec{Preset: "tiny-vit", Depth: 2}, 1, cuda.CPU, cuda.Float32, nil)
	cnn, _ := model.Build(model.Spec{Preset: "convnet-bn"}, 1, cuda.CPU, cuda.Float32, nil)
	cases := []struct {
		s     Strategy
		m     model.Model
		roles []model.Role // exactly these are personal
	}{
		{FedAvg(), vit, nil},
		{FedProx{Mu: 0.01}, vit, nil},
		{FedPer(), vit, []model.Role{model.RoleHead}},
		{VanillaPersonalizedT(), vit, []model.Role{model.RoleAttnQKV}},
		{VanillaAttention(), vit, []model.Role{model.RoleAttnQKV, model.RoleAttnOut, model.RoleHead}},
		{FedBN(), vit, []model.Role{model.RoleNorm}},
		{FedBN(), cnn, []model.Role{model.RoleNorm, model.RoleNormStats}},
		{Local(), cnn, model.Roles()},
		{FedRep{}, vit, []model.Role{model.RoleHead}},
		{FedBABU{}, vit, []model.Role{model.RoleHead}},
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

// tinySplit is synthetic 1×16×16 data for fast engine tests.
func tinySplit() *data.Split {
	return &data.Split{Train: data.Synthetic("syn/train", 240, 1, 16, 16, 4, 1), Test: data.Synthetic("syn/test", 80, 1, 16, 16, 4, 2)}
}

type setup struct {
	fed         *data.Federated
	train, test data.Samples
}

func newSetup(t *testing.T, sp *data.Split, pc data.PartitionConfig) *setup {
	t.Helper()
	return newSetupOn(t, sp, pc, cuda.CPU)
}

// newSetupOn partitions sp and uploads both sets to dev.
func newSetupOn(t *testing.T, sp *data.Split, pc data.PartitionConfig, dev cuda.Device) *setup {
	t.Helper()
	fed, err := sp.Partition(pc)
	if err != nil {
		t.Fatal(err)
	}
	mean, std := data.ChannelStats(sp.Train)
	tr, err := data.Upload(fed.Train, dev, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	te, err := data.Upload(fed.Test, dev, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(); te.Close() })
	return &setup{fed, tr, te}
}

func convnet(image, ch, classes int64, bn bool) Builder {
	return convnetAs(image, ch, classes, bn, cuda.Float32)
}

func convnetAs(image, ch, classes int64, bn bool, dt cuda.DType) Builder {
	return func(k int, g *cuda.Generator) (model.Model, error) {
		preset := "convnet"
		if bn {
			preset = "convnet-bn"
		}
		return model.Build(model.Spec{Preset: preset, Image: image, Channels: ch, Classes: classes}, k, cuda.CPU, dt, g)
	}
}

// vitSpec is a tiny ViT for the 16×16 grey, 4-class test images: patch 4, the given width,
// depth, head width (2 heads) and MLP; dropout nil keeps the preset's 0.1.
func vitSpec(dim, depth, headDim, mlp int64, dropout *float64) model.Spec {
	return model.Spec{Preset: "tiny-vit", Image: 16, Channels: 1, Classes: 4, Patch: 4, Dim: dim, Depth: depth,
		Heads: 2, HeadDim: headDim, MLP: mlp, Dropout: dropout}
}

// checkStackedEqualsSequential trains the same run stacked, one client at a time, as
// groups of one client taken by two threads in turn (Workers 2, the CPU's default on two
// cores) and as two groups on two threads (Stack), and requires
// equal global models, client stores, strategy state, round losses and evaluations. strat
// makes a fresh strategy for each run.
func checkStackedEqualsSequential(t *testing.T, st *setup, cfg Config, strat func() Strategy, build Builder) {
	t.Helper()
	variants := []struct {
		name string
		set  func(*Config)
	}{
		{"stacked", func(c *Config) {}},
		{"sequential", func(c *Config) { c.Sequential = true }},
		{"two workers, groups of one", func(c *Config) { c.Workers = 2 }},
		{"two workers, one group each", func(c *Config) { c.Workers, c.Stack = 2, (c.PerRound+1)/2 }},
	}
	var runs []*Run
	for _, v := range variants {
		c := cfg
		v.set(&c)
		r, err := New(c, strat(), st.fed, st.train, st.test, build)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Train(); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		runs = append(runs, r)
	}
	a := runs[0]
	for i, b := range runs[1:] {
		against := variants[i+1].name
		for i, p := range a.global.Params().List {
			compare(t, against, "global "+p.Name, p.T, b.global.Params().List[i].T)
			if a.store[i] != nil {
				compare(t, against, "store "+p.Name, a.store[i], b.store[i])
			}
		}
		if state := a.hooks.server.State; state != nil {
			names, ta := state()
			_, tb := b.hooks.server.State()
			for i := range ta {
				compare(t, against, names[i], ta[i], tb[i])
			}
		}
		for r := range a.History {
			la, lb := a.History[r].TrainLoss, b.History[r].TrainLoss
			if math.Abs(la-lb) > 1e-6*math.Abs(lb) { // the loss is summed in float32
				t.Fatalf("round %d loss stacked %g, %s %g", r, la, against, lb)
			}
			ea, eb := a.History[r].Eval, b.History[r].Eval
			if (ea == nil) != (eb == nil) || ea != nil && !slices.Equal(ea.Correct, eb.Correct) {
				t.Fatalf("round %d evaluation: stacked %+v, %s %+v", r, ea, against, eb)
			}
		}
	}
}

func TestStackedEqualsSequential(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	for _, strat := range []func() Strategy{FedPer, FedBN, func() Strategy { return FedProx{Mu: 0.1} }, func() Strategy { return &FedRoD{} }} {
		t.Run(strat().Name(), func(t *testing.T) {
			cfg := Config{Rounds: 2, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
				Augment: data.Augment{Pad: 2, Flip: true}, Seed: 11, Device: cuda.CPU, DType: cuda.Float64}
			// float64: with BatchNorm over a few real samples, float32 rounding differences
			// between grouped and plain convolutions grow to 1e-3 within two epochs
			checkStackedEqualsSequential(t, st, cfg, strat, convnetAs(16, 1, 4, true, cuda.Float64))
		})
	}
}

func TestStackedEqualsSequentialWithDropout(t *testing.T) {
	// a tiny ViT with dropout 0.1: equal only because each client draws from its own stream
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		return model.Build(vitSpec(16, 2, 8, 24, nil), k, cuda.CPU, cuda.Float64, g)
	}
	cfg := Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	checkStackedEqualsSequential(t, st, cfg, VanillaPersonalizedT, vit)
}

func compare(t *testing.T, against, what string, x, y *cuda.Tensor) {
	t.Helper()
	a, err1 := x.Float64s()
	b, err2 := y.Float64s()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9+1e-9*math.Abs(b[i]) {
			t.Fatalf("%s[%d]: stacked %.17g, %s %.17g (diff %.3g)", what, i, a[i], against, b[i], a[i]-b[i])
		}
	}
}

// TestRoundLeavesNoHandles: after the first round (which makes the run's step states),
// rounds leave the live tensors and generators unchanged, and Close frees all of the
// run's (FedRep: two phases, so two step states; noise: the plan's own streams).
func TestRoundLeavesNoHandles(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1, NoiseMax: 0.2})
	tensors, gens := cuda.LiveTensors(), cuda.LiveGenerators()
	r, err := New(Config{Rounds: 3, PerRound: 2, Epochs: 2, Batch: 16, Momentum: 0.9, Seed: 1, Device: cuda.CPU, EvalEvery: 1}, FedRep{FedRepConfig{RepEpochs: 1}}, st.fed, st.train, st.test, convnet(16, 1, 4, false))
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
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1, HoldOut: 0.25})
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rounds: 0, PerRound: 2}, "Config.Rounds: 0"},
		{Config{Rounds: 1, PerRound: 4}, "3 clients can train"},
		{Config{Rounds: 1, PerRound: 1, LR: -1}, "Config.LR: -1"},
		{Config{Rounds: 1, PerRound: 1, Momentum: 1}, "Config.Momentum: 1"},
	} {
		c.cfg.Device = cuda.CPU
		if _, err := New(c.cfg, FedAvg(), st.fed, st.train, st.test, convnet(16, 1, 4, false)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error mentioning %q", c.cfg, err, c.want)
		}
	}
}

// TestCheckNamesTheCallersKeys: Check names a setting as the caller's keys do, and by its
// field where they give no name.
func TestCheckNamesTheCallersKeys(t *testing.T) {
	keys := Keys{LR: "train.lr", Sequential: "train.sequential", Workers: "train.workers"}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rounds: 1, Epochs: 1, Batch: 1, LR: -1, Protocol: EvalFedTP}, "train.lr: -1"},
		{Config{Rounds: 1, Epochs: 1, Batch: 1, LR: 1, Protocol: EvalFedTP, Workers: 2, Sequential: true}, "train.workers: 2, but train.sequential trains"},
		{Config{Rounds: 1, Epochs: 1, Batch: 1, LR: 1, Protocol: EvalFedTP, Stack: -1}, "Config.Stack: -1"},
		{Config{Rounds: 1, Epochs: 1, Batch: 1, LR: 1, Protocol: "x"}, "Config.Protocol"},
	} {
		if err := c.cfg.Check(keys); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error starting %q", c.cfg, err, c.want)
		}
	}
}

// n is the number of test predictions behind the micro accuracy.
func (e EvalResult) n() int {
	n := 0
	for _, c := range e.Count {
		n += c
	}
	return n
}

func TestNaNLossNamesTheClient(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	// a learning rate this large diverges within a few steps
	cfg := Config{Rounds: 5, PerRound: 2, Epochs: 3, Batch: 8, LR: 1e6, Seed: 1, Device: cuda.CPU}
	r, err := New(cfg, FedAvg(), st.fed, st.train, st.test, convnet(16, 1, 4, false))
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
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	r, err := New(Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU}, FedAvg(), st.fed, st.train, st.test, convnet(32, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Round(0); err == nil || !strings.Contains(err.Error(), "convnet: input") {
		t.Fatalf("error %v, want the model's input-shape error", err)
	}
}
