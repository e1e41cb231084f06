package fl_test

import (
	"math"
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// novelSetup holds 3 of 6 clients out of training.
func novelSetup(t *testing.T) *fltest.Setup {
	return fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 6, Alpha: 0.5, MinSize: 5, HoldOut: 0.5, Seed: 3})
}

func trainedRun(t *testing.T, st *fltest.Setup, cfg fl.Config, strat fl.Strategy, build fl.Builder) *fl.Run {
	t.Helper()
	r, err := fl.New(cfg, strat, st.Fed, st.Train, st.Test, build)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := r.Train(); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFineTuneNovel checks the study's bookkeeping for each kind of strategy: epoch 0 is
// the ordinary evaluation of the novel clients, fine-tuning changes their accuracy, the run
// itself is left exactly as it was, and the chunked (stacked) study equals the study with
// one client per chunk (the last chunk of two pads a repeated client that must not count).
func TestFineTuneNovel(t *testing.T) {
	st := novelSetup(t)
	if len(st.Fed.Part.Novel) != 3 {
		t.Fatalf("novel clients %v, want 3", st.Fed.Part.Novel)
	}
	lowRank := func() fl.Strategy {
		return fltest.Strategy(t, "transfed", fl.Options{Hyper: fltest.SmallHyper(), Rank: fltest.RankOf(2)})
	}
	pfedhn := func() fl.Strategy {
		return fltest.Strategy(t, "pfedhn", fl.Options{Hyper: fltest.SmallHyper(), Own: algo.PFedHNConfig{InnerSteps: 3, Clip: 50}})
	}
	cases := []struct {
		strat func() fl.Strategy
		mode  string
		tuned string
		build fl.Builder // nil: quietViT
	}{
		{func() fl.Strategy { return &algo.FedTP{Hyper: fltest.SmallHyper()} }, fl.TuneEmbedding, fl.TuneEmbedding, nil},
		{func() fl.Strategy { return &algo.FedTP{Hyper: fltest.SmallHyper()} }, fl.TuneHypernetwork, fl.TuneHypernetwork, nil},
		{func() fl.Strategy { return algo.VanillaAttention() }, "", "personal", nil},
		{func() fl.Strategy { return &algo.FedRoD{} }, "", "personal", nil},
		{func() fl.Strategy { return algo.FedAvg() }, "", "model", nil},
		{lowRank, fl.TuneEmbedding, fl.TuneEmbedding, fltest.TinyFocal},
		{lowRank, fl.TuneHypernetwork, fl.TuneHypernetwork, fltest.TinyFocal},
		{algo.VanillaCustomizedT, "", "personal", fltest.TinyFocal},
		{pfedhn, fl.TuneEmbedding, fl.TuneEmbedding, nil},
		{pfedhn, fl.TuneHypernetwork, fl.TuneHypernetwork, nil},
		{pfedhn, fl.TuneEmbedding, fl.TuneEmbedding, fltest.ConvnetAs(16, 1, 4, true, cuda.Float64)},
	}
	for _, c := range cases {
		name := c.strat().Name() + "/" + c.tuned
		if c.build != nil && c.strat().Name() == "pfedhn" {
			name += "/convnet-bn"
		}
		if c.build == nil {
			c.build = fltest.QuietViT
		}
		t.Run(name, func(t *testing.T) {
			var curves []fl.NovelCurve
			for _, chunk := range []int{2, 1} {
				cfg := fl.Config{Rounds: 2, PerRound: 2, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 5, EvalChunk: chunk, Device: cuda.CPU, DType: cuda.Float64}
				r := trainedRun(t, st, cfg, c.strat(), c.build)
				before, err := r.Evaluate()
				if err != nil {
					t.Fatal(err)
				}
				state := snapshotState(t, r)
				curve, err := r.FineTuneNovel(fl.NovelConfig{Epochs: 2, LR: 0.05, Mode: c.mode})
				if err != nil {
					t.Fatal(err)
				}
				if curve.Tuned != c.tuned || len(curve.Accuracy) != 3 || !slices.Equal(curve.Clients, st.Fed.Part.Novel) {
					t.Fatalf("tuned %q, %d epochs, clients %v", curve.Tuned, len(curve.Accuracy), curve.Clients)
				}
				for i, cl := range curve.Clients {
					if curve.Accuracy[0][i] != before.Accuracy[cl] {
						t.Errorf("client %d before fine-tuning: %g, evaluation says %g", cl, curve.Accuracy[0][i], before.Accuracy[cl])
					}
				}
				if !(curve.Loss[2] < curve.Loss[0]) {
					t.Errorf("fine-tuning did not lower the novel clients' test loss: %v", curve.Loss)
				}
				after, err := r.Evaluate()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(before.Accuracy, after.Accuracy) || !slices.Equal(before.Loss, after.Loss) {
					t.Error("the study changed the run's evaluation")
				}
				checkState(t, r, state)
				curves = append(curves, curve)
				// a novel client's result does not depend on the others tuned before it
				last := curve.Clients[len(curve.Clients)-1]
				alone := []fl.EvalResult{fl.NewEvalResult(6), fl.NewEvalResult(6), fl.NewEvalResult(6)}
				if _, err := r.TuneNovel(fl.NovelConfig{Epochs: 2, LR: 0.05, Mode: c.mode}, []int{last}, alone); err != nil {
					t.Fatal(err)
				}
				for e := range alone {
					if d := math.Abs(alone[e].Loss[last] - curve.PerClientLoss[e][len(curve.Clients)-1]); d > 1e-12 {
						t.Fatalf("epoch %d: client %d tuned alone has loss %g, with the others %g", e, last, alone[e].Loss[last], curve.PerClientLoss[e][len(curve.Clients)-1])
					}
				}
			}
			for e := range curves[0].Accuracy {
				for i := range curves[0].Accuracy[e] {
					a, b := curves[0].PerClientLoss[e][i], curves[1].PerClientLoss[e][i]
					if math.Abs(a-b) > 1e-12 || curves[0].Accuracy[e][i] != curves[1].Accuracy[e][i] {
						t.Fatalf("epoch %d client %d: chunk of 2 gives loss %g, chunk of 1 %g", e, curves[0].Clients[i], a, b)
					}
				}
			}
		})
	}
}

// snapshotState copies the run's global model, store and strategy state to the host.
func snapshotState(t *testing.T, r *fl.Run) [][]float64 {
	t.Helper()
	var out [][]float64
	for _, ts := range stateTensors(r) {
		v, err := ts.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func checkState(t *testing.T, r *fl.Run, want [][]float64) {
	t.Helper()
	for i, ts := range stateTensors(r) {
		if v, _ := ts.Float64s(); !slices.Equal(v, want[i]) {
			t.Fatalf("state tensor %d changed", i)
		}
	}
}

func stateTensors(r *fl.Run) []*cuda.Tensor {
	var ts []*cuda.Tensor
	for i, p := range r.Global().Params().List {
		ts = append(ts, p.T)
		if r.Store()[i] != nil {
			ts = append(ts, r.Store()[i])
		}
	}
	_, more := r.ServerState()
	ts = append(ts, more...)
	return ts
}

// TestTuneGeneratorIsGradientDescent checks the chain rule through the hypernetwork: one
// fine-tuning step of a novel client (all its training samples in one batch) moves its
// embedding, and a trunk bias, by −lr times the gradient of its training loss that central
// finite differences give, in both modes, for FedTP and pFedHN (whose hypernetwork makes
// the whole model).
func TestTuneGeneratorIsGradientDescent(t *testing.T) {
	st := novelSetup(t)
	c := st.Fed.Part.Novel[0]
	n := len(st.Fed.Part.Train[c])
	strategies := map[string]func() generator{
		"fedtp": func() generator { return &algo.FedTP{Hyper: fltest.SmallHyper()} },
		"pfedhn": func() generator {
			return fltest.Strategy(t, "pfedhn", fl.Options{Hyper: fltest.SmallHyper(), Own: algo.PFedHNConfig{InnerSteps: 2}}).(generator)
		},
	}
	for _, name := range []string{"fedtp", "pfedhn"} {
		for _, mode := range []string{fl.TuneEmbedding, fl.TuneHypernetwork} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				testTuneGenerator(t, st, c, n, strategies[name](), mode)
			})
		}
	}
}

// generator is a strategy whose hypernetwork generates parameters.
type generator = fl.GenerateStage

// testTuneGenerator is one case of TestTuneGeneratorIsGradientDescent.
func testTuneGenerator(t *testing.T, st *fltest.Setup, c, n int, f generator, mode string) {
	cfg := fl.Config{Rounds: 1, PerRound: 2, Batch: n, LR: 0.05, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	r := trainedRun(t, st, cfg, f, fltest.QuietViT)
	single, err := r.SingleModel()
	if err != nil {
		t.Fatal(err)
	}
	gh := f.GenerateHooks()
	params, _ := gh.Tune(mode)
	z, bias := gh.Net().Params()[0], gh.Net().Params()[2] // embeddings; the first trunk layer's bias
	e := int(gh.Net().Cfg.Embed)
	probes := []struct {
		t  *cuda.Tensor
		at int
	}{{z, c * e}, {z, c*e + e - 1}, {bias, 0}, {bias, 5}}
	if mode == fl.TuneEmbedding {
		probes = probes[:2]
	}
	loss := func() float64 { return novelTrainLoss(t, r, f, single, c) }
	want := make([]float64, len(probes))
	const h = 1e-6
	for i, p := range probes {
		v0 := elem(t, p.t, p.at)
		setElem(t, p.t, p.at, v0+h)
		up := loss()
		setElem(t, p.t, p.at, v0-h)
		down := loss()
		setElem(t, p.t, p.at, v0)
		want[i] = v0 - 0.1*(up-down)/(2*h)
	}
	epochs := []fl.EvalResult{fl.NewEvalResult(6), fl.NewEvalResult(6)}
	if err := r.TuneGenerator(fl.NovelConfig{Epochs: 1, LR: 0.1, Mode: mode}, params, single, []int{c}, 1, epochs); err != nil {
		t.Fatal(err)
	}
	for i, p := range probes {
		if got := elem(t, p.t, p.at); math.Abs(got-want[i]) > 1e-7 {
			t.Errorf("probe %d: after one step %.10g, −lr·finite-difference gradient gives %.10g", i, got, want[i])
		}
	}
}

// novelTrainLoss is client c's mean training cross-entropy with its generated weights,
// all its training samples in one batch.
func novelTrainLoss(t *testing.T, r *fl.Run, f fl.GenerateStage, m model.Model, c int) float64 {
	t.Helper()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	rows := cuda.FromSlice(s, cuda.CPU, []int64{int64(c)})
	r.Load(s, m, []int{c})
	r.LoadGenerated(s, m, f.GenerateHooks().Generate(s, rows))
	plan, err := data.NewPlan([]int{c}, [][]int{r.Federated().Part.Train[c]}, data.PlanConfig{Epochs: 1, Batch: len(r.Federated().Part.Train[c]), Round: -1})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := plan.Upload(cuda.CPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	b := r.TrainSamples().Batch(s, dp, 0)
	v, err := fl.MeanCrossEntropy(s, m.Forward(s, r.Input(s, b.X), &model.Pass{}), b.Y, b.Mask).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func elem(t *testing.T, x *cuda.Tensor, i int) float64 {
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v[i]
}

func setElem(t *testing.T, x *cuda.Tensor, i int, v float64) {
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	flat := s.Reshape(x, -1)
	s.CopyFrom(s.Narrow(flat, 0, int64(i), 1), cuda.FromSlice(s, cuda.CPU, []float64{v}))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}
