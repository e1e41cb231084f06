package algo

import (
	"math"
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// microConvNet is pFedHN's ConvNet shrunk to 2 filters per convolution and 4 hidden units,
// with BatchNorm (float64, 16×16 grey, 4 classes): small enough that a finite-difference
// check can visit every hypernetwork element, and with buffers.
func microConvNet(k int, g *cuda.Generator) (model.Model, error) {
	c := model.ConvNetConfig{Image: 16, Channels: 1, Conv1: 2, Conv2: 2, FC1: 4, FC2: 4, Classes: 4, BatchNorm: true}
	return model.NewConvNet("micro-convnet", c, k, cuda.CPU, cuda.Float64, g)
}

// microViT is a float64 ViT of width 4, one block, no dropout.
func microViT(k int, g *cuda.Generator) (model.Model, error) {
	none := 0.0
	return model.Build(fltest.VitSpec(4, 1, 2, 4, &none), k, cuda.CPU, cuda.Float64, g)
}

// recordedPFedHN is pFedHN that records its server update.
type recordedPFedHN struct {
	*PFedHN
	recording
}

func (r *recordedPFedHN) GenerateHooks() fl.GenerateHooks { return r.wrap(r.PFedHN.GenerateHooks()) }

// TestPFedHNServerUpdateIsTheWeightedJacobianProduct runs one pFedHN round of three
// clients, K = 3 local steps each, and checks the server's update of every hypernetwork
// element (φ and every embedding) against Σ_i (m_i/M) J_iᵀ (θ_i⁰ − θ_iᴷ) with finite-
// difference Jacobians (checkServerUpdate): every trainable parameter is generated and
// none is averaged or stored, BatchNorm's statistics are stored per client. A micro ViT
// with full heads, a micro ConvNet with BatchNorm and rank-2 heads.
func TestPFedHNServerUpdateIsTheWeightedJacobianProduct(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 1, PerRound: 3, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 7, Device: cuda.CPU, DType: cuda.Float64}
	for _, c := range []struct {
		name  string
		build fl.Builder
		rank  int64
	}{{"vit-full", microViT, 0}, {"convnet-bn-rank-2", microConvNet, 2}} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordedPFedHN{PFedHN: pFedHN(fl.Options{Rank: fltest.RankOf(c.rank), Own: PFedHNConfig{InnerSteps: 3, Clip: 50},
				Hyper: hyper.Config{Embed: 3, Hidden: 3, Layers: 2, LR: 1, Momentum: -1, WeightDecay: -1}})}
			r, err := fl.New(cfg, rec, st.Fed, st.Train, st.Test, c.build)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			buffers := 0
			for _, p := range fltest.Declared(t, c.build).Params().List {
				if generated, stored := rec.Generated(p), fltest.Rows(t, r, p.Name) != nil; generated == p.Buffer || stored != p.Buffer {
					t.Fatalf("%s (buffer %v): generated %v, stored %v", p.Name, p.Buffer, generated, stored)
				}
				if p.Buffer {
					buffers++
				}
			}
			if (c.name == "convnet-bn-rank-2") != (buffers > 0) {
				t.Fatalf("%d buffers", buffers)
			}
			if got := rec.Net().Cfg.Rank; got != c.rank {
				t.Fatalf("rank %d, want %d", got, c.rank)
			}
			met, err := r.Round(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(met.Clients) != 3 {
				t.Fatalf("clients %v", met.Clients)
			}
			checkServerUpdate(t, rec.Net(), &rec.recording, 5)
		})
	}
}

// TestPFedHNStackedEqualsSequential: pFedHN trained stacked equals pFedHN trained one client
// at a time (hypernetwork, momentum, the clients' BatchNorm statistics, losses), with K
// steps and per-client gradient clipping tight enough to act, with the run's epochs, and
// with low-rank heads.
func TestPFedHNStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 2, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-5, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	small := hyper.Config{Embed: 4, Hidden: 6, Layers: 4}
	for _, c := range []struct {
		name  string
		strat func() fl.Strategy
		build fl.Builder
	}{
		{"steps-clip", func() fl.Strategy {
			return pFedHN(fl.Options{Hyper: small, Own: PFedHNConfig{InnerSteps: 7, Clip: 0.5}})
		}, fltest.ConvnetAs(16, 1, 4, true, cuda.Float64)},
		{"epochs", func() fl.Strategy { return pFedHN(fl.Options{Hyper: small}) }, fltest.SmallViT},
		{"rank-2", func() fl.Strategy {
			return pFedHN(fl.Options{Hyper: small, Rank: fltest.RankOf(2), Own: PFedHNConfig{InnerSteps: 4, Clip: 50}})
		}, fltest.SmallViT},
	} {
		t.Run(c.name, func(t *testing.T) { fltest.StackedEqualsSequential(t, st, cfg, c.strat, c.build) })
	}
}

// countedPFedHN is pFedHN whose local optimizer counts its steps and the clients active in
// each.
type countedPFedHN struct {
	*PFedHN
	steps  int
	active []float64
}

type countingOptimizer struct {
	fl.Optimizer
	c *countedPFedHN
}

func (o countingOptimizer) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	o.c.steps++
	a, _ := active.Float64s()
	o.c.active = append(o.c.active, a...)
	o.Optimizer.Step(s, params, grads, active)
}

func (c *countedPFedHN) TrainHooks() fl.TrainHooks {
	h := c.PFedHN.TrainHooks()
	h.Optimizer = func(phase int, run fl.SGDConfig) fl.Optimizer {
		return countingOptimizer{c.PFedHN.Optimizer(phase, run), c}
	}
	return h
}

// TestPFedHNTakesKSteps: with InnerSteps K every client of a round takes exactly K steps,
// whatever its number of samples (the smallest client needs several epochs, the largest
// stops within its first), and the round's samples are K full batches per client.
func TestPFedHNTakesKSteps(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	var sizes []int
	for _, p := range st.Fed.Part.Train {
		sizes = append(sizes, len(p))
	}
	const batch, k = 8, 5
	if slices.Min(sizes) >= k*batch || slices.Max(sizes) <= k*batch {
		t.Fatalf("client sizes %v do not straddle %d steps of %d", sizes, k, batch)
	}
	c := &countedPFedHN{PFedHN: pFedHN(fl.Options{Hyper: fltest.SmallHyper(), Own: PFedHNConfig{InnerSteps: k}})}
	cfg := fl.Config{Rounds: 2, PerRound: 5, Batch: batch, LR: 0.05, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	r, err := fl.New(cfg, c, st.Fed, st.Train, st.Test, fltest.QuietViT)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	least := slices.Min(sizes)
	if want := (k + (least+batch-1)/batch - 1) / ((least + batch - 1) / batch); c.epochs != want {
		t.Fatalf("epochs %d for the smallest client's %d samples, want %d", c.epochs, least, want)
	}
	for round := range 2 {
		c.steps, c.active = 0, nil
		met, err := r.Round(round)
		if err != nil {
			t.Fatal(err)
		}
		if c.steps != k || slices.Min(c.active) != 1 {
			t.Fatalf("round %d: %d steps, activity %v; want %d steps of every client", round, c.steps, c.active, k)
		}
		// every client's K batches are full except, for a client with fewer than K·B
		// samples, an epoch's last batch
		want := 0
		for _, n := range sizes {
			per := (n + batch - 1) / batch
			for s := range k {
				if s%per == per-1 && n%batch != 0 {
					want += n % batch
				} else {
					want += batch
				}
			}
		}
		if met.Samples != want {
			t.Fatalf("round %d: %d samples, want %d", round, met.Samples, want)
		}
	}
}

// TestPFedHNDefaults: the registry's pfedhn generates every trainable parameter with the
// official trunk width and the automatic embedding width (1 + ⌊N/4⌋), automatically sized
// heads and the configured steps and clip (also on the hypernetwork's step); set sizes and
// ranks are honoured.
func TestPFedHNDefaults(t *testing.T) {
	a, err := fl.LookupAlgorithm("pfedhn")
	if err != nil {
		t.Fatal(err)
	}
	p := a.New(fl.Options{Hyper: hyper.Config{LR: 0.02}, Own: PFedHNConfig{InnerSteps: 50, Clip: 50}}).(*PFedHN)
	if p.Name() != "pfedhn" || p.Hyper.Hidden != 100 || p.Hyper.Embed != 0 || p.Hyper.Rank != hyper.RankAuto || p.Hyper.Clip != 50 || p.InnerSteps != 50 {
		t.Errorf("pfedhn defaults: %+v, %+v", p.Hyper, p.PFedHNConfig)
	}
	if q := a.New(fl.Options{Hyper: hyper.Config{Embed: 7, Hidden: 9}, Rank: fltest.RankOf(0)}).(*PFedHN); q.Hyper.Embed != 7 || q.Hyper.Hidden != 9 || q.Hyper.Rank != 0 {
		t.Errorf("pfedhn with embed 7, hidden 9, rank 0: %+v", q.Hyper)
	}
	for _, n := range [][2]int64{{50, 13}, {100, 26}, {3, 1}, {4, 2}} {
		if got := PFedHNEmbed(int(n[0])); got != n[1] {
			t.Errorf("%d clients: embedding %d, want %d (int(1 + N/4))", n[0], got, n[1])
		}
	}

	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 9, Seed: 1})
	q := pFedHN(fl.Options{Hyper: hyper.Config{Hidden: 5}, Own: PFedHNConfig{InnerSteps: 2, Clip: 3}})
	r, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Batch: 16, Seed: 1, Device: cuda.CPU, DType: cuda.Float64}, q, st.Fed, st.Train, st.Test, fltest.ConvnetAs(16, 1, 4, true, cuda.Float64))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg := q.Net().Cfg
	if cfg.Embed != 3 || cfg.Hidden != 5 || cfg.Layers != 4 || cfg.Clip != 3 || cfg.Clients != 9 || q.Hyper.Embed != 0 {
		t.Errorf("bound hypernetwork %+v (configured embed %d)", cfg, q.Hyper.Embed)
	}
	var want []string
	for _, p := range fltest.Declared(t, fltest.ConvnetAs(16, 1, 4, true, cuda.Float64)).Params().List {
		if !p.Buffer {
			want = append(want, p.Name)
		}
	}
	var got []string
	for _, tg := range q.Net().Targets {
		got = append(got, tg.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("generated %v, want every trainable parameter %v", got, want)
	}
	m, _ := fltest.ConvnetAs(16, 1, 4, true, cuda.Float64)(1, nil)
	defer m.Close()
	if hp := q.HyperParams(m, 9); hp != float64(q.Net().Count()) {
		t.Errorf("HyperParams %g, the built hypernetwork holds %d", hp, q.Net().Count())
	}
}

// TestNormClippedStep: the clipped local step equals the plain step on each client's
// gradients scaled by min(1, max/(‖g_k‖ + 1e-6)), ‖g_k‖ the client's norm over all its
// parameters: one client above the bound, one below.
func TestNormClippedStep(t *testing.T) {
	s := cuda.NewScope()
	defer s.Close()
	g, _ := cuda.NewGenerator(4, cuda.CPU)
	defer g.Close()
	shapes := [][]int64{{2, 3, 4}, {2, 5}}
	var a, b, grads []*cuda.Tensor
	for _, sh := range shapes {
		p := s.Randn(g, cuda.Float64, cuda.CPU, sh...)
		a, b = append(a, p), append(b, s.Clone(p))
		x := s.Randn(g, cuda.Float64, cuda.CPU, sh...)
		// client 0's gradient is large, client 1's small
		grads = append(grads, s.Mul(x, cuda.FromSlice(s, cuda.CPU, []float64{10, 0.01}, append([]int64{2}, ones(len(sh)-1)...)...)))
	}
	var sq [2]float64
	for _, x := range grads {
		v, _ := x.Float64s()
		for i, e := range v {
			sq[i/(len(v)/2)] += e * e
		}
	}
	const bound = 2.0
	coef := []float64{math.Min(1, bound/(math.Sqrt(sq[0])+1e-6)), math.Min(1, bound/(math.Sqrt(sq[1])+1e-6))}
	if coef[0] > 0.5 || coef[1] != 1 {
		t.Fatalf("norms %v do not test both cases", sq)
	}
	var scaled []*cuda.Tensor
	for i, x := range grads {
		scaled = append(scaled, s.Mul(x, cuda.FromSlice(s, cuda.CPU, coef, append([]int64{2}, ones(len(shapes[i])-1)...)...)))
	}
	active := cuda.FromSlice(s, cuda.CPU, []float32{1, 1})
	run := fl.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-3}
	clippedOpt, plain := &normClipped{max: bound, Optimizer: fl.NewSGD(run)}, fl.NewSGD(run)
	defer clippedOpt.Close()
	defer plain.Close()
	for range 2 {
		clippedOpt.Step(s, a, grads, active)
		plain.Step(s, b, scaled, active)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		x, _ := a[i].Float64s()
		y, _ := b[i].Float64s()
		for e := range x {
			if math.Abs(x[e]-y[e]) > 1e-14 {
				t.Fatalf("parameter %d[%d]: clipped %g, scaled %g", i, e, x[e], y[e])
			}
		}
	}
}

func ones(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// TestPFedHNRefuses: negative steps or clip are refused when the run starts.
func TestPFedHNRefuses(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	for _, c := range []PFedHNConfig{{InnerSteps: -1}, {Clip: -1}} {
		_, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU, DType: cuda.Float64}, pFedHN(fl.Options{Own: c}), st.Fed, st.Train, st.Test, microViT)
		if err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
