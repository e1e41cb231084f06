package fl_test

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
	"pfl/internal/testenv"
)

// TestGraphsAreIgnoredOnTheCPU: Graphs on the CPU runs the same eager steps (equal
// losses) and captures nothing.
func TestGraphsAreIgnoredOnTheCPU(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	var losses [2][]float64
	for i, graphs := range []bool{false, true} {
		r, err := fl.New(fl.Config{Rounds: 2, PerRound: 2, Batch: 16, Seed: 1, Device: cuda.CPU, Graphs: graphs}, algo.FedPer(), st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h, err := r.Train()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h {
			losses[i] = append(losses[i], m.TrainLoss)
		}
		if n, err := r.GraphStatus(); n != 0 || err != nil {
			t.Fatalf("graphs %v on the CPU: %d captured, %v", graphs, n, err)
		}
	}
	for i := range losses[0] {
		if losses[0][i] != losses[1][i] {
			t.Fatalf("round %d: loss %g with graphs asked for on the CPU, %g without", i, losses[1][i], losses[0][i])
		}
	}
}

// TestCUDAGraphRoundsEqualEager (CUDA only) trains the same runs with the step captured
// as a CUDA graph and eagerly: FedTP on a tiny ViT with dropout (per-client streams, the
// hypernetwork's Q/K/V, momentum, augmentation, feature noise) and FedRep (two phases,
// two captures). The graph runs must capture every phase, end equal to the eager runs
// (float32; replays run the same kernels, so only a kernel choice could differ), and hold
// device memory and live handles constant from the third round (the first evaluated) on.
func TestCUDAGraphRoundsEqualEager(t *testing.T) {
	dev := testenv.RequireCUDA(t)
	st := fltest.NewSetupOn(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 6, Alpha: 0.5, MinSize: 5, Seed: 3, NoiseMax: 0.2}, dev)
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		return model.Build(fltest.VitSpec(32, 2, 16, 48, nil), k, dev, cuda.Float32, g)
	}
	cases := []struct {
		name     string
		strat    func() fl.Strategy
		captures int
	}{
		{"fedtp", func() fl.Strategy { return &algo.FedTP{Hyper: fltest.SmallHyper()} }, 1},
		// K steps cut from several epochs, and the per-client clipping inside the captured step
		{"pfedhn", func() fl.Strategy {
			return fltest.Strategy(t, "pfedhn", fl.Options{Hyper: fltest.SmallHyper(), Own: algo.PFedHNConfig{InnerSteps: 5, Clip: 1}})
		}, 1},
		{"fedrep", func() fl.Strategy { return algo.FedRep{FedRepConfig: algo.FedRepConfig{RepEpochs: 1}} }, 2},
		// the evaluation's fine-tuning is a phase too: captured inside Round, eager outside
		{"fedbabu", func() fl.Strategy { return algo.FedBABU{FedBABUConfig: algo.FedBABUConfig{FineTuneEpochs: 1}} }, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const rounds = 6
			runs := map[bool]*fl.Run{}
			for _, graphs := range []bool{false, true} {
				cfg := fl.Config{Rounds: rounds, PerRound: 3, Epochs: 2, Batch: 8, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-4,
					Augment: data.Augment{Pad: 2, Flip: true}, EvalEvery: 3, Seed: 7, Device: dev, Graphs: graphs}
				r, err := fl.New(cfg, c.strat(), st.Fed, st.Train, st.Test, vit)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				var tensors, alloc int64
				for round := range rounds {
					if _, err := r.Round(round); err != nil {
						t.Fatal(err)
					}
					if round == 2 { // after the first evaluation (FedBABU's fine-tuning state)
						tensors = cuda.LiveTensors()
						alloc, _, _ = cuda.CUDAMemoryStats(dev.Index, false)
					}
				}
				if n := cuda.LiveTensors(); n != tensors {
					t.Errorf("graphs %v: %d live tensors after round 6, %d after round 3", graphs, n, tensors)
				}
				if a, _, _ := cuda.CUDAMemoryStats(dev.Index, false); a != alloc {
					t.Errorf("graphs %v: %d bytes allocated after round 6, %d after round 3", graphs, a, alloc)
				}
				n, err := r.GraphStatus()
				if graphs && (n != c.captures || err != nil) {
					t.Fatalf("%d steps captured (want %d), last capture error: %v", n, c.captures, err)
				}
				runs[graphs] = r
			}
			a, b := runs[false], runs[true]
			for i := range a.History {
				la, lb := a.History[i].TrainLoss, b.History[i].TrainLoss
				if math.Abs(la-lb) > 1e-4*math.Abs(la) {
					t.Errorf("round %d: loss %.7g eager, %.7g replayed", i, la, lb)
				}
			}
			for i, p := range a.Global().Params().List {
				closeTensors(t, "global "+p.Name, p.T, b.Global().Params().List[i].T, 1e-4)
				if a.Store()[i] != nil {
					closeTensors(t, "store "+p.Name, a.Store()[i], b.Store()[i], 1e-4)
				}
			}
			ea, eb := a.History[rounds-1].Eval, b.History[rounds-1].Eval
			if ea == nil || eb == nil || math.Abs(ea.Micro-eb.Micro) > 0.02 {
				t.Errorf("final accuracy eager %+v, replayed %+v", ea, eb)
			}
			// outside Round (the default stream) a captured phase runs eagerly
			va, err := a.Evaluate()
			if err != nil {
				t.Fatal(err)
			}
			vb, err := b.Evaluate()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(va.Micro-eb.Micro) > 0.02 || math.Abs(vb.Micro-eb.Micro) > 0.02 {
				t.Errorf("evaluations after the rounds: eager run %.4f, graph run %.4f, last round's %.4f", va.Micro, vb.Micro, eb.Micro)
			}
		})
	}
}

// closeTensors requires x ≈ y elementwise within rel of y's largest magnitude.
func closeTensors(t *testing.T, what string, x, y *cuda.Tensor, rel float64) {
	t.Helper()
	a, err1 := x.Float64s()
	b, err2 := y.Float64s()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	var scale float64
	for _, v := range b {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > rel*scale+1e-7 {
			t.Fatalf("%s[%d]: eager %.8g, replayed %.8g", what, i, a[i], b[i])
		}
	}
}
