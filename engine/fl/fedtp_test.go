package fl

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/hyper"
	"pfl/engine/model"
	"pfl/engine/safetensors"
)

// smallViT is a float64 ViT for 16×16 grey images with dropout, for exactness tests.
func smallViT(k int, g *cuda.Generator) (model.Model, error) {
	return model.Build(vitSpec(16, 2, 8, 24, nil), k, cuda.CPU, cuda.Float64, g)
}

func smallHyper() hyper.Config { return hyper.Config{Embed: 8, Hidden: 12, Layers: 4} }

func TestFedTPStackedEqualsSequential(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := Config{Rounds: 3, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-5, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	for _, strat := range []func() Strategy{
		func() Strategy { return &FedTP{Hyper: smallHyper()} },
		func() Strategy { return &FedTP{Hyper: smallHyper(), Local: []model.Role{model.RoleHead}} },
		func() Strategy { return &FedTP{Hyper: smallHyper(), RoD: true} },
		func() Strategy {
			return &FedTP{Hyper: smallHyper(), Roles: []model.Role{model.RoleMLP, model.RoleNorm}}
		},
	} {
		t.Run(strat().Name(), func(t *testing.T) { checkStackedEqualsSequential(t, st, cfg, strat, smallViT) })
	}
}

// TestFedTPRound checks what one round does to the server and the model: generated
// parameters are neither averaged nor stored; the embeddings of clients outside the round
// only decay (φ ← φ − β·λ·φ, momentum starting at zero), those in it move; everything else
// is averaged.
func TestFedTPRound(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 5, Seed: 3})
	cfg := Config{Rounds: 1, PerRound: 2, Batch: 16, LR: 0.05, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	f := &FedTP{Hyper: smallHyper()}
	r, err := New(cfg, f, st.fed, st.train, st.test, smallViT)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, p := range r.global.Params().List {
		if r.isGen[i] != (p.Role == model.RoleAttnQKV) || r.store[i] != nil {
			t.Fatalf("%s: generated %v, stored %v", p.Name, r.isGen[i], r.store[i] != nil)
		}
	}
	if len(f.Net().Targets) != 2 {
		t.Fatalf("%d hypernetwork heads for 2 blocks", len(f.Net().Targets))
	}
	z0, _ := f.Net().Params()[0].Float64s()
	qkv := slices.IndexFunc(r.global.Params().List, func(p *model.Param) bool { return p.Role == model.RoleAttnQKV })
	g0, _ := r.global.Params().List[qkv].T.Float64s()
	met, err := r.Round(0)
	if err != nil {
		t.Fatal(err)
	}
	z1, _ := f.Net().Params()[0].Float64s()
	e := int(f.Net().Cfg.Embed)
	decay := 1 - f.Net().Cfg.LR*f.Net().Cfg.WeightDecay
	for c := 0; c < 5; c++ {
		in := slices.Contains(met.Clients, c)
		moved := false
		for j := c * e; j < (c+1)*e; j++ {
			if d := math.Abs(z1[j] - decay*z0[j]); d > 1e-15 {
				moved = true
			}
		}
		if moved != in {
			t.Errorf("client %d (in round: %v): embedding moved beyond decay: %v", c, in, moved)
		}
	}
	if g1, _ := r.global.Params().List[qkv].T.Float64s(); !slices.Equal(g0, g1) {
		t.Error("the global model's Q/K/V changed: generated parameters must not be averaged")
	}
}

// TestFedTPResumesExactly stops a run after two rounds, saves and reloads its state
// through a safetensors file, and continues: the hypernetwork, its momentum and the global
// model equal those of an uninterrupted run.
func TestFedTPResumesExactly(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 5, Seed: 3})
	cfg := Config{Rounds: 4, PerRound: 2, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	whole, err := New(cfg, &FedTP{Hyper: smallHyper()}, st.fed, st.train, st.test, smallViT)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if _, err := whole.Train(); err != nil {
		t.Fatal(err)
	}
	first, err := New(cfg, &FedTP{Hyper: smallHyper()}, st.fed, st.train, st.test, smallViT)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	for round := 0; round < 2; round++ {
		if _, err := first.Round(round); err != nil {
			t.Fatal(err)
		}
	}
	state, err := first.State()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, state, nil); err != nil {
		t.Fatal(err)
	}
	file, err := safetensors.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	second, err := New(cfg, &FedTP{Hyper: smallHyper()}, st.fed, st.train, st.test, smallViT)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.Restore(file, first.History); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Train(); err != nil {
		t.Fatal(err)
	}
	names, want := whole.hooks.server.State()
	_, got := second.hooks.server.State()
	if len(names) != 2*len(whole.strat.(*FedTP).Net().Params()) {
		t.Fatalf("state holds %d tensors", len(names))
	}
	for i := range want {
		compare(t, "resumed", names[i], got[i], want[i])
	}
	for i, p := range whole.global.Params().List {
		compare(t, "resumed", p.Name, second.global.Params().List[i].T, p.T)
	}
}

func TestFedTPNeedsItsRoles(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	// a ConvNet has no attention: a clear error naming the roles
	_, err := New(Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU}, &FedTP{}, st.fed, st.train, st.test, convnet(16, 1, 4, false))
	if err == nil {
		t.Fatal("FedTP on a ConvNet accepted")
	}
	t.Log(err)
	// generated and personal at once is a contradiction
	_, err = New(Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU}, &FedTP{Local: []model.Role{model.RoleAttnQKV}}, st.fed, st.train, st.test, smallViT)
	if err == nil {
		t.Fatal("Q/K/V both generated and personal accepted")
	}
}
