package fl_test

// Algorithms written only against the lifecycle hooks of strategy.go, from outside the
// package, as a new algorithm would be: they run client-stacked, and stacked training must
// equal training the clients one at a time.

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/model"
	"pfl/engine/safetensors"
)

// ditto has Ditto's shape (Li et al., ICML 2021, Alg. 1): every client keeps a personal
// model v beside the shared model w; w trains on the plain loss and is averaged, v trains
// on its loss plus λ/2‖v − w_global‖² (w_global: the round's starting global model) and
// stays with its client, and clients predict with v.
type ditto struct {
	lambda   float64
	personal map[*model.Param]bool // the personal copies' parameters, in every model built
	shared   int                   // parameters of one copy
	predicts int                   // Predict calls: evaluation went through the hook
}

func newDitto() *ditto {
	return &ditto{lambda: 0.5, personal: map[*model.Param]bool{}}
}

func (d *ditto) Name() string                 { return "ditto-shape" }
func (d *ditto) Personal(p *model.Param) bool { return d.personal[p] }
func (d *ditto) parts(m model.Model) (w, v model.Model) {
	w, _ = model.PartOf(m, 0) // every model a run of d uses is joined (wrap)
	v, _ = model.PartOf(m, 1)
	return w, v
}

// PrepareHooks join a personal copy beside every model the run builds.
func (d *ditto) PrepareHooks() fl.PrepareHooks { return fl.PrepareHooks{Wrap: d.wrap} }

// TrainHooks train both models, the personal one pulled towards the global model.
func (d *ditto) TrainHooks() fl.TrainHooks { return fl.TrainHooks{Loss: d.loss, Penalty: d.penalty} }

// EvalHooks predict with the personal model.
func (d *ditto) EvalHooks() fl.EvalHooks { return fl.EvalHooks{Predict: d.predict} }

// wrap joins a personal copy to m.
func (d *ditto) wrap(m model.Model, w fl.Wrapping) (model.Model, error) {
	v, err := w.Build(m.Params().K, w.Gen)
	if err != nil {
		return nil, err
	}
	d.shared = len(m.Params().List)
	for _, p := range v.Params().List {
		d.personal[p] = true
	}
	return model.Join([]string{"", "personal."}, m, v)
}

// loss is both models' losses.
func (d *ditto) loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	w, v := d.parts(m)
	return s.Add(meanCE(s, w.Forward(s, b.X, pass), b), meanCE(s, v.Forward(s, b.X, pass), b))
}

// penalty pulls each personal parameter towards its shared twin's global value: params
// and global list the shared copy first, then the personal copy.
func (d *ditto) penalty(s *cuda.Scope, params, global []*cuda.Tensor) *cuda.Tensor {
	var sum *cuda.Tensor
	for j := 0; j < d.shared; j++ {
		diff := s.Sub(params[d.shared+j], global[j])
		t := s.Sum(s.Mul(diff, diff), false)
		if sum == nil {
			sum = t
		} else {
			sum = s.Add(sum, t)
		}
	}
	return s.MulScalar(sum, d.lambda/2)
}

// predict uses the personal model.
func (d *ditto) predict(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor {
	d.predicts++
	_, v := d.parts(m)
	return v.Forward(s, x, &model.Pass{})
}

// serverMomentum has FedAvgM's server (Hsu et al., 2019): the server keeps a momentum of
// the clients' average update (ServerHooks.Aggregate), and clients run plain SGD without
// momentum whatever the run's setting (TrainHooks.Optimizer).
type serverMomentum struct {
	beta float64
	buf  []*cuda.Tensor
}

func (*serverMomentum) Name() string               { return "server-momentum" }
func (*serverMomentum) Personal(*model.Param) bool { return false }
func (a *serverMomentum) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Optimizer: func(_ int, c fl.SGDConfig) fl.Optimizer { return fl.NewSGD(fl.SGDConfig{LR: c.LR}) }}
}

func (a *serverMomentum) ServerHooks() fl.ServerHooks { return fl.ServerHooks{Aggregate: a.aggregate} }

func (a *serverMomentum) aggregate(s *cuda.Scope, global, trained []*cuda.Tensor, w *cuda.Tensor) error {
	if a.buf == nil {
		for _, g := range global {
			b := s.Zeros(g.DType(), g.Device(), g.Shape()...)
			s.Keep(b)
			a.buf = append(a.buf, b)
		}
	}
	for i, g := range global {
		shape := make([]int64, trained[i].Dim())
		for j := range shape {
			shape[j] = 1
		}
		shape[0] = -1
		mean := s.Sum(s.Mul(trained[i], s.Reshape(s.To(w, g.DType()), shape...)), true, 0)
		// buf ← β·buf + (global − mean); global ← global − buf
		s.CopyFrom(a.buf[i], s.Add(s.MulScalar(a.buf[i], a.beta), s.Sub(g, mean)))
		s.CopyFrom(g, s.Sub(g, a.buf[i]))
	}
	return s.Err()
}

func (a *serverMomentum) Close() error {
	for _, b := range a.buf {
		b.Close()
	}
	return nil
}

// meanCE is each client's mean cross-entropy over its real samples [K].
func meanCE(s *cuda.Scope, logits *cuda.Tensor, b fl.Batch) *cuda.Tensor {
	k, n, c := logits.Size(0), logits.Size(1), logits.Size(2)
	per := s.Reshape(s.CrossEntropy(s.Reshape(logits, -1, c), s.Reshape(b.Y, -1), nil, cuda.ReduceNone, 0), k, n)
	m := s.To(b.Mask, per.DType())
	return s.Div(s.Sum(s.Mul(per, m), false, 1), s.Clamp(s.Sum(m, false, 1), 1, math.Inf(1)))
}

func TestHookOnlyAlgorithmsStackedEqualSequential(t *testing.T) {
	sp := &data.Split{Train: data.Synthetic("syn/train", 240, 1, 16, 16, 4, 1), Test: data.Synthetic("syn/test", 80, 1, 16, 16, 4, 2)}
	fed, err := sp.Partition(data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	mean, std := data.ChannelStats(sp.Train)
	train, err := data.Upload(fed.Train, cuda.CPU, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	defer train.Close()
	test, err := data.Upload(fed.Test, cuda.CPU, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	defer test.Close()
	build := func(k int, g *cuda.Generator) (model.Model, error) {
		return model.Build(model.Spec{Preset: "convnet", Image: 16, Channels: 1, Classes: 4}, k, cuda.CPU, cuda.Float64, g)
	}
	for _, c := range []struct {
		name  string
		strat func() fl.Strategy
		used  func(s fl.Strategy, state []safetensors.Tensor) bool // the hooks were called
	}{
		{"ditto", func() fl.Strategy { return newDitto() }, func(s fl.Strategy, state []safetensors.Tensor) bool {
			kept := false
			for _, ts := range state {
				kept = kept || ts.Name == "store/personal.fc3.weight"
			}
			return kept && s.(*ditto).predicts > 0
		}},
		{"server momentum", func() fl.Strategy { return &serverMomentum{beta: 0.9} }, func(s fl.Strategy, _ []safetensors.Tensor) bool {
			return s.(*serverMomentum).buf != nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var states [2][]safetensors.Tensor
			var evals [2]fl.EvalResult
			var losses [2][]float64
			for i, seq := range []bool{false, true} {
				cfg := fl.Config{Rounds: 3, PerRound: 3, Epochs: 2, Batch: 7, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-3,
					Seed: 11, Device: cuda.CPU, DType: cuda.Float64, Sequential: seq, EvalEvery: 1}
				strat := c.strat()
				r, err := fl.New(cfg, strat, fed, train, test, build)
				if err != nil {
					t.Fatal(err)
				}
				h, err := r.Train()
				if err != nil {
					r.Close()
					t.Fatal(err)
				}
				for _, m := range h {
					losses[i] = append(losses[i], m.TrainLoss)
				}
				evals[i] = *h[len(h)-1].Eval
				if states[i], err = r.State(); err != nil {
					t.Fatal(err)
				}
				if !c.used(strat, states[i]) {
					t.Fatalf("the strategy's hooks were not used")
				}
				r.Close()
			}
			// float64 throughout: stacked and one-at-a-time differ only in summation order
			for j, ts := range states[0] {
				a, _ := ts.Float64s()
				b, _ := states[1][j].Float64s()
				for e := range a {
					if math.Abs(a[e]-b[e]) > 1e-9+1e-9*math.Abs(b[e]) {
						t.Fatalf("%s[%d]: stacked %.10g, one at a time %.10g", ts.Name, e, a[e], b[e])
					}
				}
			}
			for r := range losses[0] {
				if math.Abs(losses[0][r]-losses[1][r]) > 1e-6*math.Abs(losses[1][r]) { // losses are summed in float32
					t.Fatalf("round %d loss stacked %g, one at a time %g", r, losses[0][r], losses[1][r])
				}
			}
			if evals[0].Micro != evals[1].Micro {
				t.Fatalf("accuracy stacked %g, one at a time %g", evals[0].Micro, evals[1].Micro)
			}
		})
	}
}
