package fl_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// TestWorkersBitIdentical: float32 runs of the ViT (FedTP, with its hypernetwork's
// generation and learning; FedPer) and of FocalNet (TransFed) give the same bits, in
// every parameter, client row, server tensor, loss and evaluation, whether a round's
// clients train as one stack or as groups of any size on 1–4 threads: a client's training reads only
// its own rows, batches and dropout stream, these models' kernels compute each client's
// rows alike whatever the stack's size (batched matmuls per slice, row-wise norms and
// softmax, one convolution per client on the CPU), and the losses are summed client by
// client in the round's order; groups of at most Stack clients taken by the workers in
// turn (stack 1, 2 and 3, with fewer workers than groups or as many) change nothing either. No
// tolerance: a kernel that rounded by stack size would break this, and with it the
// promise that a run does not depend on the machine's core count (train.workers' default).
func TestWorkersBitIdentical(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 6, Alpha: 0.5, MinSize: 5, Seed: 3})
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		return model.Build(fltest.VitSpec(16, 2, 8, 24, nil), k, cuda.CPU, cuda.Float32, g)
	}
	focal := func(k int, g *cuda.Generator) (model.Model, error) {
		c := model.FocalNetConfig{Image: 16, Channels: 1, Patch: 4, Dims: []int64{8}, Depths: []int64{2}, Levels: 2, Window: 3, MLPRatio: 2, Classes: 4}
		return model.NewFocalNet("tiny-focal", c, k, cuda.CPU, cuda.Float32, g)
	}
	small := hyper.Config{Embed: 8, Hidden: 12, Layers: 4}
	for _, c := range []struct {
		name  string
		strat func() fl.Strategy
		build fl.Builder
	}{
		{"fedtp", func() fl.Strategy { return &algo.FedTP{Hyper: small} }, vit},
		{"fedper", algo.FedPer, vit},
		{"transfed", func() fl.Strategy { return fltest.Strategy(t, "transfed", fl.Options{Hyper: small}) }, focal},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := fl.Config{Rounds: 2, PerRound: 4, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-5,
				EvalEvery: 1, EvalChunk: 2, Seed: 5, Device: cuda.CPU}
			var want *fl.Run
			for _, v := range []struct{ workers, stack, groups int }{
				{1, 0, 1}, {2, 0, 4}, {3, 0, 4}, {4, 0, 4}, {1, 1, 4}, {1, 2, 2}, {2, 3, 2}, {3, 2, 2}, {4, 4, 1},
			} {
				cfg.Workers, cfg.Stack = v.workers, v.stack
				r, err := fl.New(cfg, c.strat(), st.Fed, st.Train, st.Test, c.build)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if _, err := r.Train(); err != nil {
					t.Fatal(err)
				}
				if got := max(len(r.TrainGroups()), 1); got != v.groups {
					t.Fatalf("workers %d, stack %d: %d groups, want %d", v.workers, v.stack, got, v.groups)
				}
				workers := 10*v.workers + v.stack // named in failures as workers·10 + stack
				if want == nil {
					want = r
					continue
				}
				sameBits(t, workers, "global", params(want.Global()), params(r.Global()))
				for i := range want.Store() {
					if want.Store()[i] != nil {
						sameBits(t, workers, "store", want.Store()[i:i+1], r.Store()[i:i+1])
					}
				}
				_, a := want.ServerState()
				_, b := r.ServerState()
				sameBits(t, workers, "server state", a, b)
				for i, m := range want.History {
					g := r.History[i]
					if m.TrainLoss != g.TrainLoss || m.Samples != g.Samples {
						t.Fatalf("workers·10+stack %d, round %d: loss %v samples %d, one stack %v %d", workers, i, g.TrainLoss, g.Samples, m.TrainLoss, m.Samples)
					}
					if !slices.Equal(m.Eval.Loss, g.Eval.Loss) || !slices.Equal(m.Eval.Correct, g.Eval.Correct) {
						t.Fatalf("workers·10+stack %d, round %d: evaluation %v, one stack %v", workers, i, g.Eval.Loss, m.Eval.Loss)
					}
				}
			}
		})
	}
}

func params(m model.Model) []*cuda.Tensor {
	var ts []*cuda.Tensor
	for _, p := range m.Params().List {
		ts = append(ts, p.T)
	}
	return ts
}

// sameBits fails unless a and b hold the same float32 values, bit for bit.
func sameBits(t *testing.T, workers int, what string, a, b []*cuda.Tensor) {
	t.Helper()
	for i := range a {
		x, err1 := a[i].Float64s()
		y, err2 := b[i].Float64s()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for j := range x {
			if x[j] != y[j] {
				t.Fatalf("%s tensor %d [%d]: workers·10+stack %d: %.9g, one stack %.9g", what, i, j, workers, y[j], x[j])
			}
		}
	}
}

// TestWorkersRefused: more than one worker is refused on CUDA and with sequential
// training, and a negative count, each naming the reason.
func TestWorkersRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  fl.Config
		want string
	}{
		{fl.Config{Rounds: 1, PerRound: 2, Workers: 2, Device: cuda.Device{Type: cuda.CUDADevice}}, "Config.Workers: 2 on cuda"},
		{fl.Config{Rounds: 1, PerRound: 2, Workers: 2, Sequential: true, Device: cuda.CPU}, "but Config.Sequential trains"},
		{fl.Config{Rounds: 1, PerRound: 2, Workers: -1, Device: cuda.CPU}, "Config.Workers: -1"},
		{fl.Config{Rounds: 1, PerRound: 2, Stack: -1, Device: cuda.CPU}, "Config.Stack: -1"},
		{fl.Config{Rounds: 1, PerRound: 2, Stack: 1, Device: cuda.Device{Type: cuda.CUDADevice}}, "Config.Stack: 1"},
	} {
		err := c.cfg.Validate(4)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

// TestEvalBatchChangesNoPrediction: an evaluation in passes of 3 test samples per client
// and one in passes of 50 (each client's whole test split) count the same correct
// predictions for every client, and their mean losses agree to float32 rounding: a
// convolution may take another algorithm for another batch size, so each float32 logit,
// and the loss computed from it, can move by a few units in the last place (~1e-7
// relative); a mean of such losses moves by no more, and 1e-6 leaves a factor of 10.
func TestEvalBatchChangesNoPrediction(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	var res []fl.EvalResult
	for _, b := range []int{3, 50} {
		r, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Batch: 9, EvalBatch: b, LR: 0.05, Seed: 5, Device: cuda.CPU}, algo.FedPer(), st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Train(); err != nil {
			t.Fatal(err)
		}
		ev, err := r.Evaluate()
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, ev)
	}
	if !slices.Equal(res[0].Correct, res[1].Correct) || !slices.Equal(res[0].Count, res[1].Count) {
		t.Fatalf("correct %v of %v with batch 3, %v of %v with 50", res[0].Correct, res[0].Count, res[1].Correct, res[1].Count)
	}
	for c := range res[0].Loss {
		if a, b := res[0].Loss[c], res[1].Loss[c]; math.Abs(a-b) > 1e-6*math.Abs(b) {
			t.Fatalf("client %d: loss %.17g with batch 3, %.17g with 50", c, a, b)
		}
	}
}

// TestProbeActivations: the probe measures a positive size for a batch whose activations
// pass the CPU cache's 1 MiB threshold, grows with the batch, and leaves the run as it
// was: a run probed before its first round trains to the same bits as one not probed.
// ClientsAtOnce counts the round's stack, or the largest group times the threads.
func TestProbeActivations(t *testing.T) {
	if _, ok := cuda.HostCache(); !ok {
		t.Skip("the CPU caching allocator is off (PFL_CPU_CACHE=0)")
	}
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 3})
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		// the MLP's hidden layer of a batch of 40: 40·17·1024 floats, 2.8 MB
		return model.Build(fltest.VitSpec(256, 2, 128, 1024, nil), k, cuda.CPU, cuda.Float32, g)
	}
	var sizes []float64
	var runs []*fl.Run
	for _, batch := range []int{40, 60} {
		r, err := fl.New(fl.Config{Rounds: 1, PerRound: 3, Batch: batch, LR: 0.05, Seed: 5, Device: cuda.CPU, Workers: 2}, algo.FedPer(), st.Fed, st.Train, st.Test, vit)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		size, ok := r.ProbeActivations(batch)
		if !ok || size <= 0 {
			t.Fatalf("batch %d: probe %v bytes (%v)", batch, size, ok)
		}
		sizes = append(sizes, size)
		runs = append(runs, r)
	}
	if sizes[1] <= sizes[0] {
		t.Fatalf("activations of batch 60 %v bytes, of batch 40 %v", sizes[1], sizes[0])
	}
	plain, err := fl.New(fl.Config{Rounds: 1, PerRound: 3, Batch: 40, LR: 0.05, Seed: 5, Device: cuda.CPU, Workers: 2}, algo.FedPer(), st.Fed, st.Train, st.Test, vit)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, r := range []*fl.Run{runs[0], plain} {
		if _, err := r.Train(); err != nil {
			t.Fatal(err)
		}
	}
	sameBits(t, 0, "global after a probe", params(plain.Global()), params(runs[0].Global()))
	for i := range plain.Store() {
		if plain.Store()[i] != nil {
			sameBits(t, 0, "store after a probe", plain.Store()[i:i+1], runs[0].Store()[i:i+1])
		}
	}
	for _, c := range []struct {
		cfg  fl.Config
		want int
	}{
		{fl.Config{Workers: 1}, 3},
		{fl.Config{Workers: 2}, 2},           // clients one by one, two threads
		{fl.Config{Workers: 2, Stack: 2}, 4}, // groups of 2 + 1, two threads: the largest twice
		{fl.Config{Workers: 1, Stack: 1}, 1},
	} {
		cfg := c.cfg
		cfg.Rounds, cfg.PerRound, cfg.Batch, cfg.LR, cfg.Seed, cfg.Device = 1, 3, 40, 0.05, 5, cuda.CPU
		r, err := fl.New(cfg, algo.FedPer(), st.Fed, st.Train, st.Test, vit)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.ClientsAtOnce(); got != c.want {
			t.Errorf("workers %d, stack %d: %d clients at once, want %d", cfg.Workers, cfg.Stack, got, c.want)
		}
		r.Close()
	}
}
