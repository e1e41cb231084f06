package experiment

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/hyper"
)

// TestPFedHNSuite runs pFedHN on the ConvNet with BatchNorm over synthetic 32×32 images,
// one client per round (the paper's setting), for two rounds: with its defaults (50 local
// steps, clipping at 50, embeddings 1 + ⌊N/4⌋ wide, a 100-wide trunk), as FedTP's baseline
// (the run's epochs, no clipping, FedTP's sizes), and with rank-4 heads over doubled
// rounds (a labelled member setting train.rounds). Every run finishes, its checkpoint
// evaluates to its last round, and it writes its client embeddings; the checkpoint holds
// a head for every trainable parameter of the ConvNet.
func TestPFedHNSuite(t *testing.T) {
	cfg := filled(config.Config{Name: "pfedhn", Out: t.TempDir(),
		Suite: []string{"pfedhn",
			"pfedhn-fedtp: algorithm.name=pfedhn; algorithm.pfedhn.inner_steps=0; algorithm.pfedhn.clip=0; algorithm.hyper.embed=16; algorithm.hyper.hidden=24",
			"pfedhn-r4: algorithm.name=pfedhn; algorithm.hyper.rank=4; train.rounds=4"},
		Data:  config.Data{Dataset: "synthetic:200", Clients: 5, Partition: "pathological", ClassesPerClient: 2},
		Model: config.Model{Preset: "convnet-bn"},
		Train: config.Train{Rounds: 2, Participation: 0.2, Batch: 16, LR: 0.05, Momentum: 0.9, EvalEvery: 1}})
	res, err := RunSuite(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| pfedhn |", "| pfedhn-fedtp |", "| pfedhn-r4 |"} {
		if !strings.Contains(res.Table, want) {
			t.Errorf("results.md lacks %q:\n%s", want, res.Table)
		}
	}
	if len(res.Runs) != 3 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	for _, r := range res.Runs {
		name := filepath.Base(r.Dir)
		rounds := map[string]int{"pfedhn-r4": 4}[name]
		if rounds == 0 {
			rounds = 2
		}
		ev, n, err := Evaluate(r.Dir)
		if err != nil || n != rounds || ev.Micro != r.Summary.FinalMicro {
			t.Fatalf("%s: eval of the checkpoint: %v after %d rounds (%v), want %v after %d", name, ev.Micro, n, err, r.Summary.FinalMicro, rounds)
		}
		var resolved config.Config
		b, _ := os.ReadFile(filepath.Join(r.Dir, "config.json"))
		if err := json.Unmarshal(b, &resolved); err != nil {
			t.Fatal(err)
		}
		emb, err := os.ReadFile(filepath.Join(r.Dir, "embeddings.csv"))
		lines := strings.Split(strings.TrimSpace(string(emb)), "\n")
		width := map[string]int{"pfedhn-fedtp": 16}[name]
		if width == 0 {
			width = 2 // 1 + ⌊5/4⌋
		}
		if err != nil || len(lines) != 6 || strings.Count(lines[1], ",") != 1+width {
			t.Errorf("%s: embeddings.csv (%v), want 5 clients × %d:\n%s", name, err, width, emb)
		}
		ck, _ := os.ReadFile(filepath.Join(r.Dir, "checkpoint.safetensors"))
		for _, p := range []string{"conv1.weight", "conv2.bias", "fc1.weight", "fc3.bias"} {
			head := "strategy/hyper/heads." + p
			if name == "pfedhn-r4" && strings.HasSuffix(p, "weight") {
				head += ".u.weight"
			} else {
				head += ".weight"
			}
			if !strings.Contains(string(ck), head) {
				t.Errorf("%s: the checkpoint lacks %s", name, head)
			}
		}
		if name == "pfedhn" && (fl.Own[algo.PFedHNConfig](resolved.Algorithm).InnerSteps != 50 || fl.Own[algo.PFedHNConfig](resolved.Algorithm).Clip != 50) {
			t.Errorf("pfedhn's config.json: %+v", fl.Own[algo.PFedHNConfig](resolved.Algorithm))
		}
		if name == "pfedhn-fedtp" && (fl.Own[algo.PFedHNConfig](resolved.Algorithm).InnerSteps != 0 || *resolved.Algorithm.Hyper.Hidden != 24) {
			t.Errorf("pfedhn-fedtp's config.json: %+v, %+v", fl.Own[algo.PFedHNConfig](resolved.Algorithm), resolved.Algorithm.Hyper)
		}
	}
}

// TestPFedHNConfig: unset hypernetwork sizes take each algorithm's own (pfedhn: 100-wide
// trunk, automatic embedding width, automatic rank; fedtp: its 128 and 150 through
// engine/hyper's defaults), algorithm.pfedhn's defaults are the official code's, set keys
// are honoured, and bad values are refused naming the key.
func TestPFedHNConfig(t *testing.T) {
	strat := func(mutate func(a *fl.Settings)) fl.Strategy {
		c := config.Default().Resolved()
		c.Algorithm.Name = "pfedhn"
		mutate(&c.Algorithm)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return c.Algorithm.Strategy()
	}
	p := strat(func(*fl.Settings) {}).(*algo.PFedHN)
	if p.Hyper.Hidden != 100 || p.Hyper.Embed != 0 || p.Hyper.Layers != 4 || p.Hyper.Rank != hyper.RankAuto ||
		p.InnerSteps != 50 || p.Clip != 50 || p.Hyper.Clip != 50 || p.Hyper.Momentum != 0.9 || p.Hyper.WeightDecay != 1e-3 || p.Hyper.LR != 0.01 || !p.All {
		t.Errorf("pfedhn by default: %+v, %+v", p.Hyper, p.PFedHNConfig)
	}
	p = strat(func(a *fl.Settings) {
		a.Hyper.Embed, a.Hyper.Hidden, a.Hyper.Rank = ptr(int64(128)), ptr(int64(150)), ptr(int64(0))
		fl.EditOwn(a, func(o *algo.PFedHNConfig) { *o = algo.PFedHNConfig{} })
	}).(*algo.PFedHN)
	if p.Hyper.Hidden != 150 || p.Hyper.Embed != 128 || p.Hyper.Rank != 0 || p.InnerSteps != 0 || p.Clip != 0 || p.Hyper.Clip != 0 {
		t.Errorf("pfedhn as FedTP's baseline: %+v, %+v", p.Hyper, p.PFedHNConfig)
	}
	fedtp := strat(func(a *fl.Settings) { a.Name = "fedtp" }).(*algo.FedTP)
	if fedtp.Hyper.Embed != 0 || fedtp.Hyper.Hidden != 0 || fedtp.Hyper.Clip != 0 || fedtp.All {
		t.Errorf("fedtp by default: %+v (zero sizes: engine/hyper's 128 and 150)", fedtp.Hyper)
	}
	for _, c := range []struct {
		mutate func(*config.Config)
		want   string
	}{
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedHNConfig) { o.InnerSteps = -1 }) }, "algorithm.pfedhn.inner_steps"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedHNConfig) { o.Clip = -1 }) }, "algorithm.pfedhn.clip"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedHNConfig) { o.Clip = math.NaN() }) }, "algorithm.pfedhn.clip"},
		{func(c *config.Config) { c.Algorithm.Hyper.Embed = ptr(int64(0)) }, "algorithm.hyper.embed"},
		{func(c *config.Config) { c.Algorithm.Hyper.Hidden = ptr(int64(-3)) }, "algorithm.hyper.hidden"},
		{func(c *config.Config) { c.Algorithm.Hyper.Rank = ptr(int64(-1)) }, "algorithm.hyper.rank"},
		{func(c *config.Config) { c.Algorithm.Generate = []string{"mlp"} }, "algorithm.generate"},
	} {
		cfg := config.Default().Resolved()
		cfg.Algorithm.Name = "pfedhn"
		c.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	// a suite member is checked with its own keys
	cfg := config.Default().Resolved()
	cfg.Suite = []string{"fedavg", "bad: algorithm.name=pfedhn; algorithm.pfedhn.inner_steps=-5"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "algorithm.pfedhn.inner_steps") {
		t.Errorf("suite member with inner_steps -5: %v", err)
	}
}
