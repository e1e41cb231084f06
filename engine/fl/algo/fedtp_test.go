package algo

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
	"pfl/engine/safetensors"
)

func TestFedTPStackedEqualsSequential(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 5, Alpha: 0.5, MinSize: 5, Seed: 3})
	cfg := fl.Config{Rounds: 3, PerRound: 3, Epochs: 1, Batch: 9, LR: 0.05, Momentum: 0.9, WeightDecay: 1e-5, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	for _, strat := range []func() fl.Strategy{
		func() fl.Strategy { return &FedTP{Hyper: fltest.SmallHyper()} },
		func() fl.Strategy { return &FedTP{Hyper: fltest.SmallHyper(), Local: []model.Role{model.RoleHead}} },
		func() fl.Strategy { return &FedTP{Hyper: fltest.SmallHyper(), RoD: true} },
		func() fl.Strategy {
			return &FedTP{Hyper: fltest.SmallHyper(), Roles: []model.Role{model.RoleMLP, model.RoleNorm}}
		},
	} {
		t.Run(strat().Name(), func(t *testing.T) { fltest.StackedEqualsSequential(t, st, cfg, strat, fltest.SmallViT) })
	}
}

// TestFedTPRound checks what one round does to the server and the model: generated
// parameters are neither averaged nor stored; the embeddings of clients outside the round
// only decay (φ ← φ − β·λ·φ, momentum starting at zero), those in it move; everything else
// is averaged.
func TestFedTPRound(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 5, Seed: 3})
	cfg := fl.Config{Rounds: 1, PerRound: 2, Batch: 16, LR: 0.05, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	f := &FedTP{Hyper: fltest.SmallHyper()}
	r, err := fl.New(cfg, f, st.Fed, st.Train, st.Test, fltest.SmallViT)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	shapes, err := fltest.SmallViT(1, nil) // declared only: the parameters' names and roles
	if err != nil {
		t.Fatal(err)
	}
	defer shapes.Close()
	qkv := ""
	for _, p := range shapes.Params().List {
		if stored := fltest.Rows(t, r, p.Name) != nil; f.Generated(p) != (p.Role == model.RoleAttnQKV) || stored {
			t.Fatalf("%s: generated %v, stored %v", p.Name, f.Generated(p), stored)
		}
		if p.Role == model.RoleAttnQKV && qkv == "" {
			qkv = "global/" + p.Name
		}
	}
	if len(f.Net().Targets) != 2 {
		t.Fatalf("%d hypernetwork heads for 2 blocks", len(f.Net().Targets))
	}
	z0, _ := f.Net().Params()[0].Float64s()
	_, before := fltest.State(t, r)
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
	if _, after := fltest.State(t, r); !slices.Equal(before[qkv], after[qkv]) {
		t.Error("the global model's Q/K/V changed: generated parameters must not be averaged")
	}
}

// TestFedTPResumesExactly stops a run after two rounds, saves and reloads its state
// through a safetensors file, and continues: the hypernetwork, its momentum and the global
// model equal those of an uninterrupted run.
func TestFedTPResumesExactly(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 5, Seed: 3})
	cfg := fl.Config{Rounds: 4, PerRound: 2, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, DType: cuda.Float64}
	whole, err := fl.New(cfg, &FedTP{Hyper: fltest.SmallHyper()}, st.Fed, st.Train, st.Test, fltest.SmallViT)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if _, err := whole.Train(); err != nil {
		t.Fatal(err)
	}
	first, err := fl.New(cfg, &FedTP{Hyper: fltest.SmallHyper()}, st.Fed, st.Train, st.Test, fltest.SmallViT)
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
	second, err := fl.New(cfg, &FedTP{Hyper: fltest.SmallHyper()}, st.Fed, st.Train, st.Test, fltest.SmallViT)
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
	names, want := fltest.State(t, whole)
	hyperState := 0
	for _, n := range names {
		if strings.HasPrefix(n, "strategy/") {
			hyperState++
		}
	}
	if hyperState != 2*len(whole.Strategy().(*FedTP).Net().Params()) {
		t.Fatalf("state holds %d tensors of the hypernetwork", hyperState)
	}
	_, got := fltest.State(t, second)
	for _, n := range names {
		fltest.Close(t, "resumed", n, got[n], want[n])
	}
}

func TestFedTPNeedsItsRoles(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 1})
	// a ConvNet has no attention: a clear error naming the roles
	_, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU}, &FedTP{}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err == nil {
		t.Fatal("FedTP on a ConvNet accepted")
	}
	t.Log(err)
	// generated and personal at once is a contradiction
	_, err = fl.New(fl.Config{Rounds: 1, PerRound: 2, Seed: 1, Device: cuda.CPU}, &FedTP{Local: []model.Role{model.RoleAttnQKV}}, st.Fed, st.Train, st.Test, fltest.SmallViT)
	if err == nil {
		t.Fatal("Q/K/V both generated and personal accepted")
	}
}
