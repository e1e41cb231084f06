package experiment

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// TestTransFedSuite runs TransFed (full heads by default, and rank-4 heads) and Vanilla
// customized-T for two rounds on a one-block-per-stage focalnet-cifar over synthetic
// 32×32 images: every run finishes, a checkpoint evaluates to its last round, TransFed
// writes its client embeddings and checkpoints the heads of every block's f.
func TestTransFedSuite(t *testing.T) {
	cfg := filled(config.Config{Name: "transfed", Out: t.TempDir(),
		Suite:     []string{"transfed", "transfed-r4: algorithm.name=transfed; algorithm.hyper.rank=4", "vanilla-c-t"},
		Data:      config.Data{Dataset: "synthetic:200", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Model:     config.Model{Preset: "focalnet-cifar", Depth: new(int64(1))},
		Algorithm: fl.Settings{Hyper: fl.HyperSettings{Embed: ptr(int64(8)), Hidden: ptr(int64(16))}},
		Train:     config.Train{Rounds: 2, Participation: 0.4, Batch: 16, LR: 0.05, EvalEvery: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| transfed |", "| transfed-r4 |", "| vanilla-c-t |"} {
		if !strings.Contains(res.Table, want) {
			t.Errorf("results.md lacks %q:\n%s", want, res.Table)
		}
	}
	for _, r := range res.Runs {
		ev, rounds, err := Evaluate(r.Dir)
		if err != nil || rounds != 2 || ev.Micro != r.Summary.FinalMicro {
			t.Fatalf("%s: eval of the checkpoint: %v after %d rounds (%v), want %v", r.Dir, ev.Micro, rounds, err, r.Summary.FinalMicro)
		}
		ck, _ := os.ReadFile(filepath.Join(r.Dir, "checkpoint.safetensors"))
		_, emb := os.Stat(filepath.Join(r.Dir, "embeddings.csv"))
		head := "strategy/hyper/heads.layers.0.blocks.0.modulation.f.weight"
		switch filepath.Base(r.Dir) {
		case "transfed":
			if !strings.Contains(string(ck), head+".weight") || emb != nil {
				t.Errorf("transfed: full head of f in the checkpoint %v, embeddings.csv: %v", strings.Contains(string(ck), head+".weight"), emb)
			}
		case "transfed-r4":
			for _, name := range []string{head + ".u.weight", head + ".v.bias", head + ".base", "strategy/hyper/heads.layers.0.blocks.0.modulation.f.bias.weight"} {
				if !strings.Contains(string(ck), name) {
					t.Errorf("transfed-r4: the checkpoint lacks %s", name)
				}
			}
		case "vanilla-c-t":
			if strings.Contains(string(ck), "strategy/hyper") || emb == nil {
				t.Error("vanilla-c-t has a hypernetwork")
			}
		}
	}
}

// TestTransFedConfig: algorithm.generate and algorithm.hyper.rank left unset take each
// algorithm's own; set, they are honoured; a set but empty generate, a negative rank and a
// model that is not a FocalNet are refused naming the key or the model.
func TestTransFedConfig(t *testing.T) {
	strat := func(mutate func(a *fl.Settings)) fl.Strategy {
		c := config.Default().Resolved()
		c.Algorithm.Name = "transfed"
		mutate(&c.Algorithm)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return c.Algorithm.Strategy()
	}
	focal := []model.Role{model.RoleFocalF, model.RoleFocalCtx, model.RoleFocalH, model.RoleFocalProj}
	tf := strat(func(*fl.Settings) {}).(*algo.TransFed)
	if !slices.Equal(tf.Roles, focal) || tf.Hyper.Rank != hyper.RankAuto {
		t.Errorf("transfed by default: roles %v, rank %d", tf.Roles, tf.Hyper.Rank)
	}
	tf = strat(func(a *fl.Settings) { a.Generate, a.Hyper.Rank = []string{"focal_f"}, ptr(int64(0)) }).(*algo.TransFed)
	if want := []model.Role{model.RoleFocalF}; !slices.Equal(tf.Roles, want) || tf.Hyper.Rank != 0 {
		t.Errorf("transfed with generate [focal_f], rank 0: roles %v, rank %d", tf.Roles, tf.Hyper.Rank)
	}
	tf = strat(func(a *fl.Settings) { a.Generate, a.Hyper.Rank = []string{"attn_qkv"}, ptr(int64(16)) }).(*algo.TransFed)
	if !slices.Equal(tf.Roles, []model.Role{model.RoleAttnQKV}) || tf.Hyper.Rank != 16 {
		t.Errorf("transfed with generate [attn_qkv], rank 16: roles %v, rank %d", tf.Roles, tf.Hyper.Rank)
	}
	fedtp := strat(func(a *fl.Settings) { a.Name = "fedtp" }).(*algo.FedTP)
	if fedtp.Roles != nil || fedtp.Hyper.Rank != 0 {
		t.Errorf("fedtp by default: roles %v (nil: attn_qkv), rank %d", fedtp.Roles, fedtp.Hyper.Rank)
	}
	for _, c := range []struct {
		mutate func(*config.Config)
		want   string
	}{
		{func(c *config.Config) { c.Algorithm.Generate = []string{} }, "algorithm.generate"},
		{func(c *config.Config) { c.Algorithm.Hyper.Rank = ptr(int64(-1)) }, "algorithm.hyper.rank"},
	} {
		cfg := config.Default().Resolved()
		cfg.Algorithm.Name = "transfed"
		c.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	for _, alg := range []string{"transfed", "vanilla-c-t"} {
		cfg := filled(config.Config{Name: alg, Out: t.TempDir(),
			Data:      config.Data{Dataset: "synthetic:100", Clients: 4, Partition: "iid"},
			Model:     config.Model{Preset: "tiny-vit", Depth: new(int64(1))},
			Algorithm: fl.Settings{Name: alg},
			Train:     config.Train{Rounds: 1, Participation: 0.5}})
		_, err := Run(context.Background(), cfg, nil)
		if err == nil || !strings.Contains(err.Error(), "needs a FocalNet") {
			t.Errorf("%s on tiny-vit: %v", alg, err)
		}
	}
}
