package algo

import (
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

// smallGPIP is a cheap pFedGP-IP setting for tests: 3 inducing inputs per class.
func smallGPIP() *PFedGPIP {
	p := &PFedGPIP{PFedGP: *smallGP()}
	p.Inducing = 3
	return p
}

// The device loss's value and gradient against the host's: each client's loss equals
// gp.InducingLoss on its real samples' embeddings and the inducing inputs of its batch's
// classes (drawn from the same seeds), and the gradients of the summed loss with respect
// to the inducing inputs X̄ and to the network equal the host's ∂L/∂K contracted with the
// kernel's Jacobian (Kernel.FeatureGrad over the rows [samples; inducing inputs]): the
// inducing rows' part scattered into X̄'s rows, the samples' part back through the
// network's vector-Jacobian product. Everything is float64, so they agree to rounding
// (1e-9 relative).
func TestPFedGPIPLossMatchesHost(t *testing.T) {
	p := smallGPIP()
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 2, Alpha: 5, MinSize: 5, Seed: 3})
	if err := p.Bind(fl.Env{Fed: st.Fed, Device: cuda.CPU, DType: cuda.Float64, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	classes := st.Fed.Train.Classes
	g, _ := cuda.NewGenerator(7, cuda.CPU)
	defer g.Close()
	net, err := model.Build(model.Spec{Preset: "convnet", Image: 16, Channels: 1, Classes: p.EmbedDim}, 2, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Wrap(net, fl.Wrapping{Gen: g, Classes: classes})
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
	e := int(p.EmbedDim)
	z := m.Forward(s, x, &model.Pass{Train: true, Mask: mk})
	feat, labels, pos, err := hostRows(z, y, mk)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := hostPoints(s, p.points(s, m))
	if err != nil {
		t.Fatal(err)
	}
	gz := make([]float64, 2*b*e)
	gx := make([]float64, 2*classes*p.Inducing*e) // ∂L/∂X̄
	for r, gr := range gens() {
		v, _ := s.RandInt(gr, 0, 1<<62, cuda.CPU, 1).Int64s()
		idx, indY := inducingRows(labels[r], p.Inducing)
		var ind [][]float64
		for _, row := range idx {
			ind = append(ind, hp[r][row])
		}
		l, kg, err := gp.InducingLoss(p.gpConfig(false), p.h, feat[r], labels[r], ind, indY, rng.New(rng.Key{Seed: uint64(v[0]), Purpose: "pfedgp-ip/step", Round: -1, Client: -1}))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(l-lv[r]) > 1e-12*math.Abs(l) || !(l > 0) {
			t.Fatalf("client %d: device loss %.15g, host %.15g", r, lv[r], l)
		}
		fg := p.gpConfig(false).Kernel.FeatureGrad(append(append([][]float64{}, feat[r]...), ind...), kg)
		for i, at := range pos[r] {
			copy(gz[(r*b+at)*e:], fg[i])
		}
		for i, row := range idx {
			copy(gx[(r*classes*p.Inducing+row)*e:], fg[len(feat[r])+i])
		}
	}
	want := s.Grad([]*cuda.Tensor{z}, []*cuda.Tensor{cuda.FromSlice(s, cuda.CPU, gz, 2, b, p.EmbedDim)}, params, cuda.GradOptions{AllowUnused: true})
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	for i, q := range m.Params().List {
		var w []float64
		switch {
		case q.Role == model.RoleInducing:
			w = gx
		case want[i] != nil:
			w, _ = want[i].Float64s()
		}
		if got[i] == nil || w == nil {
			t.Fatalf("%s: no gradient (device %v, host %v)", q.Name, got[i] != nil, w != nil)
		}
		a, _ := got[i].Float64s()
		var norm float64
		for _, v := range w {
			norm = math.Max(norm, math.Abs(v))
		}
		if norm == 0 || len(a) != len(w) {
			t.Fatalf("%s: zero host gradient, or %d entries against %d", q.Name, len(a), len(w))
		}
		for j := range a {
			if math.Abs(a[j]-w[j]) > 1e-9*norm {
				t.Fatalf("%s[%d]: device %.12g, host %.12g", q.Name, j, a[j], w[j])
			}
		}
	}
}

// pFedGP-IP trains stacked as it trains one client at a time (the inducing inputs are
// shared parameters, averaged with the network). The last round's evaluation runs the
// conditioned predictor too.
func TestPFedGPIPStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 12, LR: 0.05, Momentum: 0.9, Seed: 11, Device: cuda.CPU, DType: cuda.Float64}
	fltest.StackedEqualsSequential(t, st, cfg, func() fl.Strategy { return smallGPIP() }, gpConvnet(6))
}

// pFedGP-IP refuses what it cannot run: no inducing input, or the marginal objective.
func TestPFedGPIPValidate(t *testing.T) {
	p := smallGPIP()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	p.Inducing = 0
	if err := p.Validate(); err == nil {
		t.Error("0 inducing inputs accepted")
	}
	p = smallGPIP()
	p.Objective = "marginal"
	if err := p.Validate(); err == nil {
		t.Error("the marginal objective accepted")
	}
}

// pFedGP-IP learns: as TestPFedGPBeatsChanceOnFashionMNIST, its clients' classifiers beat
// the best image-blind predictor by 4 binomial standard errors, with the official embedding
// width 84 and Gibbs setting, and 5 inducing inputs per class (the default 100 makes a
// node of a client with all ten classes condition on 1,000 inputs, and every evaluation
// node on its samples and those: many minutes on 2 cores).
func TestPFedGPIPBeatsChanceOnFashionMNIST(t *testing.T) {
	sp := fltest.Fashion(t, 3000, 1000)
	pc := data.PartitionConfig{Method: data.MethodDirichlet, Clients: 10, Alpha: 0.5, Seed: 1}
	st := fltest.NewSetup(t, sp, pc)
	cfg := fl.Config{Rounds: 8, PerRound: 5, Epochs: 2, Batch: 32, LR: 0.01, Momentum: 0.9, Seed: 1, Device: cuda.CPU}
	gpc := DefaultPFedGP()
	gpc.Inducing = 5
	r, err := fl.New(cfg, &PFedGPIP{PFedGP: PFedGP{PFedGPConfig: gpc}}, st.Fed, st.Train, st.Test, fltest.Convnet(28, 1, 84, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Train()
	if err != nil {
		t.Fatal(err)
	}
	res := fltest.FashionResult{EvalResult: *h[len(h)-1].Eval, Blind: fltest.BlindAccuracy(st.Fed)}
	t.Logf("pfedgp-ip: micro accuracy %.3f over %d test images (blind %.3f), per-client mean %.3f ± %.3f, train loss %.3f → %.3f",
		res.Micro, res.N(), res.Blind, res.Mean, res.Std, h[0].TrainLoss, h[len(h)-1].TrainLoss)
	const z = 4
	if floor := res.Blind + z*fltest.StdErr(res.Blind, res.N()); !(res.Micro > floor) {
		t.Errorf("accuracy %.3f, not clearly above the blind %.3f (floor %.3f)", res.Micro, res.Blind, floor)
	}
}
