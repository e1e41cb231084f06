package algo

import (
	"fmt"
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/gp"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// smallGP is a cheap pFedGP setting for tests.
func smallGP() *PFedGP {
	c := DefaultPFedGP()
	c.EmbedDim, c.Draws, c.Steps, c.EvalDraws, c.EvalSteps = 6, 3, 2, 4, 2
	return &PFedGP{PFedGPConfig: c}
}

// The device loss's value and gradient against the host's: the loss of each client equals
// gp.Loss on its real samples' embeddings (drawn from the same seeds), and the gradient of
// the summed loss with respect to the network's parameters equals the vector-Jacobian
// product of the embedding with the host's ∂L/∂z (Kernel.FeatureGrad of the host's
// ∂L/∂K, itself checked against central differences in engine/gp). Everything is float64,
// so they agree to rounding (1e-9 relative).
func TestPFedGPLossMatchesHost(t *testing.T) {
	for _, obj := range []string{"predictive", "marginal"} {
		t.Run(obj, func(t *testing.T) {
			p := smallGP()
			p.Objective = obj
			st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 2, Alpha: 5, MinSize: 5, Seed: 3})
			if err := p.Bind(fl.Env{Fed: st.Fed, Device: cuda.CPU, DType: cuda.Float64, Seed: 1}); err != nil {
				t.Fatal(err)
			}
			g, _ := cuda.NewGenerator(7, cuda.CPU)
			defer g.Close()
			m, err := model.Build(model.Spec{Preset: "convnet", Image: 16, Channels: 1, Classes: p.EmbedDim}, 2, cuda.CPU, cuda.Float64, g)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s := cuda.NewScope()
			defer s.Close()
			const b = gpStepBatch
			step := newGPStep(t, s, g)
			x, y, mk, gens := step.x, step.y, step.mask, step.gens
			loss := p.Loss(s, m, step.batch, &model.Pass{Train: true, Gens: gens(), Mask: mk})
			params, got, lv := lossGrads(t, s, m, loss)

			// the host's side
			z := m.Forward(s, x, &model.Pass{Train: true, Mask: mk})
			feat, labels, pos, err := hostRows(z, y, mk)
			if err != nil {
				t.Fatal(err)
			}
			gz := make([]float64, 2*b*int(p.EmbedDim))
			for r, gr := range gens() {
				v, _ := s.RandInt(gr, 0, 1<<62, cuda.CPU, 1).Int64s()
				l, kg, err := gp.Loss(p.gpConfig(false), p.h, feat[r], labels[r], rng.New(rng.Key{Seed: uint64(v[0]), Purpose: "pfedgp/step", Round: -1, Client: -1}))
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(l-lv[r]) > 1e-12*math.Abs(l) || !(l > 0) {
					t.Fatalf("client %d: device loss %.15g, host %.15g", r, lv[r], l)
				}
				fg := p.gpConfig(false).Kernel.FeatureGrad(feat[r], kg)
				for i, at := range pos[r] {
					copy(gz[(r*b+at)*int(p.EmbedDim):], fg[i])
				}
			}
			want := s.Grad([]*cuda.Tensor{z}, []*cuda.Tensor{cuda.FromSlice(s, cuda.CPU, gz, 2, b, p.EmbedDim)}, params, cuda.GradOptions{AllowUnused: true})
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
			for i := range params {
				if (got[i] == nil) != (want[i] == nil) {
					t.Fatalf("%s: gradient presence differs", m.Params().List[i].Name)
				}
				if got[i] == nil {
					continue
				}
				a, _ := got[i].Float64s()
				w, _ := want[i].Float64s()
				var norm float64
				for _, v := range w {
					norm = math.Max(norm, math.Abs(v))
				}
				if norm == 0 {
					t.Fatalf("%s: zero gradient", m.Params().List[i].Name)
				}
				for j := range a {
					if math.Abs(a[j]-w[j]) > 1e-9*norm {
						t.Fatalf("%s[%d]: device %.12g, host %.12g", m.Params().List[i].Name, j, a[j], w[j])
					}
				}
			}
		})
	}
}

func gpConvnet(embed int64) fl.Builder { return fltest.ConvnetAs(16, 1, embed, false, cuda.Float64) }

// pFedGP trains stacked as it trains one client at a time: each client's host draws come
// from its own stream. The last round's evaluation runs the GP predictor too.
func TestPFedGPStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 12, LR: 0.05, Momentum: 0.9, Seed: 11, Device: cuda.CPU, DType: cuda.Float64}
	fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy { return smallGP() }, gpConvnet(6))
}

// Evaluate goes through Condition and Predict: each client's counts equal those of a GP
// fitted on the host to its training embeddings (the global model's, from the same stream)
// and predicting its test embeddings, in chunks of three clients (the second padded).
func TestPFedGPEvaluatesWithTheClientsGP(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodPathological, Clients: 4, ClassesPerClient: 3, Seed: 3})
	cfg := fl.Config{Rounds: 1, PerRound: 2, Epochs: 1, Batch: 16, LR: 0.05, Seed: 5, EvalChunk: 3, Device: cuda.CPU, DType: cuda.Float64}
	p := smallGP()
	r, err := fl.New(cfg, p, st.Fed, st.Train, st.Test, gpConvnet(6))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Train(); err != nil {
		t.Fatal(err)
	}
	res, err := r.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	global := fltest.GlobalModel(t, r, gpConvnet(6))
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	embed := func(split data.Samples, idx []int) ([][]float64, []int) {
		var feat [][]float64
		var ys []int
		for _, i := range idx {
			b := split.Batch(s, mustUpload(t, []int{0}, [][]int{{i}}), 0)
			z := global.Forward(s, s.To(b.X, cuda.Float64), &model.Pass{})
			f, y, _, err := hostRows(z, b.Y, b.Mask)
			if err != nil {
				t.Fatal(err)
			}
			feat, ys = append(feat, f[0]...), append(ys, y[0]...)
		}
		return feat, ys
	}
	for c := range st.Fed.Part.Train {
		feat, ys := embed(st.Train, st.Fed.Part.Train[c])
		clf, err := gp.Fit(p.gpConfig(true), p.h, feat, ys, rng.New(rng.Key{Seed: cfg.Seed, Purpose: "pfedgp/eval", Round: -1, Client: c}))
		if err != nil {
			t.Fatal(err)
		}
		tf, ty := embed(st.Test, st.Fed.Part.Test[c])
		probs, err := clf.Predict(tf, st.Fed.Train.Classes)
		if err != nil {
			t.Fatal(err)
		}
		correct := 0
		for i, row := range probs {
			best := 0
			for k, v := range row {
				if v > row[best] {
					best = k
				}
			}
			if best == ty[i] {
				correct++
			}
		}
		if res.Correct[c] != correct || res.Count[c] != len(ty) {
			t.Errorf("client %d: evaluation %d/%d correct, host GP %d/%d", c, res.Correct[c], res.Count[c], correct, len(ty))
		}
	}
}

// mustUpload is a one-client plan of the given samples on the CPU.
func mustUpload(t *testing.T, ids []int, parts [][]int) *data.DevicePlan {
	t.Helper()
	plan, err := data.NewPlan(ids, parts, data.PlanConfig{Epochs: 1, Batch: len(parts[0]), Round: -1})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := plan.Upload(cuda.CPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	return dp
}

// Shape turns an image model's head into the embedding and refuses a text model.
func TestPFedGPShape(t *testing.T) {
	p := &PFedGP{PFedGPConfig: DefaultPFedGP()}
	s, err := p.Shape(model.Spec{Preset: "convnet", Classes: 10})
	if err != nil || s.Classes != 84 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := p.Shape(model.Spec{Preset: "lstm"}); err == nil {
		t.Fatal("a text model shaped")
	}
}

// pFedGP learns: as TestEveryBaselineBeatsChanceOnFashionMNIST, its clients' GPs beat the
// best image-blind predictor by 4 binomial standard errors (a one-sided tail of 4e-5 if
// they were no better), with the official embedding width 84 and Gibbs setting.
func TestPFedGPBeatsChanceOnFashionMNIST(t *testing.T) {
	sp := fltest.Fashion(t, 3000, 1000)
	pc := data.PartitionConfig{Method: data.MethodDirichlet, Clients: 10, Alpha: 0.5, Seed: 1}
	st := fltest.NewSetup(t, sp, pc)
	cfg := fl.Config{Rounds: 8, PerRound: 5, Epochs: 2, Batch: 32, LR: 0.01, Momentum: 0.9, Seed: 1, Device: cuda.CPU}
	r, err := fl.New(cfg, &PFedGP{PFedGPConfig: DefaultPFedGP()}, st.Fed, st.Train, st.Test, fltest.Convnet(28, 1, 84, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Train()
	if err != nil {
		t.Fatal(err)
	}
	res := fltest.FashionResult{EvalResult: *h[len(h)-1].Eval, Blind: fltest.BlindAccuracy(st.Fed)}
	t.Logf("pfedgp: micro accuracy %.3f over %d test images (blind %.3f), per-client mean %.3f ± %.3f, train loss %.3f → %.3f",
		res.Micro, res.N(), res.Blind, res.Mean, res.Std, h[0].TrainLoss, h[len(h)-1].TrainLoss)
	const z = 4
	if floor := res.Blind + z*fltest.StdErr(res.Blind, res.N()); !(res.Micro > floor) {
		t.Errorf("accuracy %.3f, not clearly above the blind %.3f (floor %.3f)", res.Micro, res.Blind, floor)
	}
}

// gpStepBatch is the batch size of newGPStep's clients.
const gpStepBatch = 10

// gpStep is the step the GP loss tests check against the host: 2 clients × gpStepBatch
// float64 16×16 grey images with labels of 4 classes, client 1 with 8 real samples
// (classes 1 and 3), and gens, which returns fresh per-client streams seeded alike on
// every call (the device's draws and the host's check must see the same numbers).
type gpStep struct {
	x, y, mask *cuda.Tensor
	batch      fl.Batch
	gens       func() []*cuda.Generator
}

func newGPStep(t *testing.T, s *cuda.Scope, g *cuda.Generator) gpStep {
	t.Helper()
	const b = gpStepBatch
	x := s.Randn(g, cuda.Float64, cuda.CPU, 2, b, 1, 16, 16)
	y := cuda.FromSlice(s, cuda.CPU, []int64{0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 1, 1, 3, 3, 1, 3, 1, 3, 0, 0}, 2, b)
	mask := make([]float32, 2*b)
	for i := range mask {
		mask[i] = 1
	}
	mask[b+8], mask[b+9] = 0, 0 // client 1 has 8 real samples (classes 1 and 3)
	mk := cuda.FromSlice(s, cuda.CPU, mask, 2, b)
	gens := func() []*cuda.Generator {
		var out []*cuda.Generator
		for c := range 2 {
			gc, _ := cuda.NewGenerator(uint64(100+c), cuda.CPU)
			t.Cleanup(func() { gc.Close() })
			out = append(out, gc)
		}
		return out
	}
	return gpStep{x: x, y: y, mask: mk, gens: gens,
		batch: fl.Batch{X: x, Y: y, Mask: mk, Clients: []int{0, 1}, Rows: cuda.FromSlice(s, cuda.CPU, []int64{0, 1})}}
}

// lossGrads returns m's parameters, the gradients of the clients' summed loss with
// respect to them (nil where unused), and each client's loss.
func lossGrads(t *testing.T, s *cuda.Scope, m model.Model, loss *cuda.Tensor) (params, grads []*cuda.Tensor, losses []float64) {
	t.Helper()
	for _, q := range m.Params().List {
		params = append(params, q.T)
	}
	grads = s.Grad([]*cuda.Tensor{s.Sum(loss, false)}, nil, params, cuda.GradOptions{AllowUnused: true})
	losses, err := loss.Float64s()
	if err != nil || s.Err() != nil {
		t.Fatal(err, s.Err())
	}
	return params, grads, losses
}

// TestPFedGPOfficialTrainerSettings: the official trainers' settings that pfl's SGD round
// would otherwise not have (experiments/heterogeneous_class_dist/trainer.py and
// trainer_ip.py): the server's uniform mean over the round's clients (Uniform), the loss
// scaler (LossScaler) and the gradient-norm clip before every step (Clip).
func TestPFedGPOfficialTrainerSettings(t *testing.T) {
	t.Run("loss scaler", func(t *testing.T) {
		g, _ := cuda.NewGenerator(7, cuda.CPU)
		defer g.Close()
		st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 2, Alpha: 5, MinSize: 5, Seed: 3})
		m, err := model.Build(model.Spec{Preset: "convnet", Image: 16, Channels: 1, Classes: 6}, 2, cuda.CPU, cuda.Float64, g)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		s := cuda.NewScope()
		defer s.Close()
		step := newGPStep(t, s, g)
		var losses [2][]float64
		var grads [2][]*cuda.Tensor
		for i, scale := range []float64{1, 2} {
			p := smallGP()
			p.LossScaler = scale
			if err := p.Bind(fl.Env{Fed: st.Fed, Device: cuda.CPU, DType: cuda.Float64, Seed: 1}); err != nil {
				t.Fatal(err)
			}
			loss := p.Loss(s, m, step.batch, &model.Pass{Train: true, Gens: step.gens(), Mask: step.mask})
			_, grads[i], losses[i] = lossGrads(t, s, m, loss)
		}
		fltest.SameWithin(t, "loss", losses[1], []float64{2 * losses[0][0], 2 * losses[0][1]}, func(int) float64 { return 0 })
		for i := range grads[0] {
			if grads[0][i] == nil {
				continue
			}
			one := fltest.Values(t, grads[0][i])
			for j := range one {
				one[j] *= 2
			}
			fltest.SameWithin(t, m.Params().List[i].Name, fltest.Values(t, grads[1][i]), one, func(int) float64 { return 0 })
		}
	})
	t.Run("clip", func(t *testing.T) {
		s := cuda.NewScope()
		defer s.Close()
		// one client's gradient of norm 100 (60, 80): clipped to 50, then one SGD step of lr 1
		for _, c := range []struct {
			clip float64
			want []float64
		}{{50, []float64{-30, -40}}, {0, []float64{-60, -80}}} {
			p := smallGP()
			p.Clip = c.clip
			opt := p.Optimizer(0, fl.SGDConfig{LR: 1})
			w := s.Zeros(cuda.Float64, cuda.CPU, 1, 2)
			opt.Step(s, []*cuda.Tensor{w}, []*cuda.Tensor{cuda.FromSlice(s, cuda.CPU, []float64{60, 80}, 1, 2)}, cuda.FromSlice(s, cuda.CPU, []float32{1}))
			fltest.SameWithin(t, fmt.Sprintf("clip %g", c.clip), fltest.Values(t, w), c.want, func(int) float64 { return 1e-5 })
			opt.Close()
		}
	})
}
