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
	"pfl/engine/rundir"
)

// TestPersonalBaselinesRunThroughTheConfig: each personalization baseline runs two rounds
// from a config (its algorithm.<name> keys included), its checkpoint holds what the
// algorithm keeps per client and evaluates to the last round's result, and the held-out
// client's fine-tuning study runs.
func TestPersonalBaselinesRunThroughTheConfig(t *testing.T) {
	for _, c := range []struct {
		alg  string
		set  func(a *fl.Settings)
		kept []string // tensors the checkpoint must hold
	}{
		{"ditto", func(a *fl.Settings) { fl.EditOwn(a, func(o *algo.DittoConfig) { o.Lambda = 0.5 }) }, []string{"store/personal.fc3.weight", "global/fc3.weight"}},
		{"apfl", func(a *fl.Settings) { fl.EditOwn(a, func(o *algo.APFLConfig) { o.Alpha = 0.4 }) }, []string{"store/personal.fc3.weight", "store/mixing.alpha"}},
		{"perfedavg", func(a *fl.Settings) {
			fl.EditOwn(a, func(o *algo.PerFedAvgSettings) { *o = algo.PerFedAvgSettings{Alpha: 0.01, Beta: 0.02, Variant: "hf"} })
		}, []string{"global/fc3.weight"}},
		{"pfedme", func(a *fl.Settings) {
			fl.EditOwn(a, func(o *algo.PFedMeSettings) {
				*o = algo.PFedMeSettings{Lambda: 15, InnerSteps: 2, PersonalLR: ptr(0.02), Beta: 0.9, Clients: "all"}
			})
		}, []string{"store/personal.fc3.weight"}},
	} {
		t.Run(c.alg, func(t *testing.T) {
			cfg := filled(config.Config{Name: c.alg, Out: t.TempDir(),
				Data:      config.Data{Dataset: "synthetic:300", Clients: 5, Partition: "dirichlet", Alpha: 0.5, HoldOut: 0.2},
				Novel:     config.Novel{Epochs: 2},
				Algorithm: fl.Settings{Name: c.alg},
				Train:     config.Train{Rounds: 2, Participation: 0.4, Batch: 16, LR: 0.05, EvalEvery: 1}})
			c.set(&cfg.Algorithm)
			res, err := Run(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			var s rundir.Summary
			b, _ := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
			if err := json.Unmarshal(b, &s); err != nil || s.Rounds != 2 || len(s.Novel) != 1 {
				t.Fatalf("summary %+v, %v", s, err)
			}
			t.Logf("novel client, %s tuned: micro accuracy by epoch %v", s.Novel[0].Tuned, s.Novel[0].Micro)
			ev, rounds, err := Evaluate(res.Dir)
			if err != nil || rounds != 2 || ev.Micro != s.FinalMicro {
				t.Fatalf("eval of the checkpoint: %v after %d rounds (%v), want %v", ev.Micro, rounds, err, s.FinalMicro)
			}
			ck, _ := os.ReadFile(filepath.Join(res.Dir, "checkpoint.safetensors"))
			for _, name := range c.kept {
				if !strings.Contains(string(ck), name) {
					t.Errorf("checkpoint lacks %s", name)
				}
			}
			cj, _ := os.ReadFile(filepath.Join(res.Dir, "config.json"))
			if !strings.Contains(string(cj), `"`+c.alg+`"`) {
				t.Errorf("config.json does not record the %s section:\n%s", c.alg, cj)
			}
		})
	}
}

func TestBaselineKeysAreValidated(t *testing.T) {
	for _, c := range []struct {
		mutate func(*config.Config)
		key    string
	}{
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.DittoConfig) { o.Lambda = -1 }) }, "algorithm.ditto.lambda"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.FedRepConfig) { o.RepEpochs = 0 }) }, "algorithm.fedrep.rep_epochs"},
		{func(c *config.Config) {
			c.Algorithm.Name, c.Train.Epochs = "fedrep", 3
			fl.EditOwn(&c.Algorithm, func(o *algo.FedRepConfig) { o.RepEpochs = 3 })
		}, "algorithm.fedrep.rep_epochs"},
		{func(c *config.Config) { c.Algorithm.Name = "fedrep" }, "algorithm.fedrep.rep_epochs"}, // 1 epoch: no head epoch left
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.APFLConfig) { o.Alpha = 1.5 }) }, "algorithm.apfl.alpha"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PerFedAvgSettings) { o.Alpha = -0.1 }) }, "algorithm.perfedavg.alpha"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PerFedAvgSettings) { o.Beta = 0 }) }, "algorithm.perfedavg.beta"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PerFedAvgSettings) { o.Variant = "so" }) }, "algorithm.perfedavg.variant"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedMeSettings) { o.Lambda = 0 }) }, "algorithm.pfedme.lambda"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedMeSettings) { o.InnerSteps = 0 }) }, "algorithm.pfedme.inner_steps"},
		{func(c *config.Config) {
			fl.EditOwn(&c.Algorithm, func(o *algo.PFedMeSettings) { o.PersonalLR = ptr(-1.0) })
		}, "algorithm.pfedme.personal_lr"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedMeSettings) { o.Beta = -1 }) }, "algorithm.pfedme.beta"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedMeSettings) { o.Clients = "every" }) }, "algorithm.pfedme.clients"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.EmbedDim = 0 }) }, "algorithm.pfedgp.embed_dim"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.OutputScale = 0 }) }, "algorithm.pfedgp.outputscale"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.LengthScale = -1 }) }, "algorithm.pfedgp.lengthscale"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.GibbsDraws = 0 }) }, "algorithm.pfedgp.gibbs_draws"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.GibbsSteps = -1 }) }, "algorithm.pfedgp.gibbs_steps"},
		{func(c *config.Config) {
			fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.EvalGibbsDraws = 0 })
		}, "algorithm.pfedgp.eval_gibbs_draws"},
		{func(c *config.Config) {
			fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.EvalGibbsSteps = -2 })
		}, "algorithm.pfedgp.eval_gibbs_steps"},
		{func(c *config.Config) {
			fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.Objective = "elbo" })
		}, "algorithm.pfedgp.objective"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.PredictRatio = 1 }) }, "algorithm.pfedgp.predict_ratio"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.Inducing = 0 }) }, "algorithm.pfedgp.inducing"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.Weights = "sizes" }) }, "algorithm.pfedgp.weights"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.LossScaler = 0 }) }, "algorithm.pfedgp.loss_scaler"},
		{func(c *config.Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.Clip = -1 }) }, "algorithm.pfedgp.clip"},
		{func(c *config.Config) {
			c.Algorithm.Name = "pfedgp-ip"
			fl.EditOwn(&c.Algorithm, func(o *algo.PFedGPSettings) { o.Objective = "marginal" })
		}, "algorithm.pfedgp.objective"},
	} {
		cfg := config.Default()
		c.mutate(&cfg)
		err := cfg.Resolved().Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.key+":") {
			t.Errorf("error %v, want one starting with %q", err, c.key)
		}
	}
	// fedrep's rep_epochs reaches the strategy: 10 epochs, 3 of them the body's
	cfg := config.Default()
	cfg.Algorithm.Name, cfg.Train.Epochs = "fedrep", 10
	fl.EditOwn(&cfg.Algorithm, func(o *algo.FedRepConfig) { o.RepEpochs = 3 })
	if err := cfg.Resolved().Validate(); err != nil {
		t.Fatal(err)
	}
	if ph := cfg.Algorithm.Strategy().(fl.TrainStage).TrainHooks().Phases(cfg.Train.Epochs); len(ph) != 2 || ph[0].Epochs != 7 || ph[1].Epochs != 3 {
		t.Errorf("fedrep with rep_epochs 3 of 10 epochs: phases %+v, want 7 head epochs, then 3 body epochs", ph)
	}
	// pFedMe's personal learning rate follows train.lr unless set
	cfg = config.Default()
	cfg.Train.LR = 0.03
	if lr := fl.Own[algo.PFedMeSettings](cfg.Resolved().Algorithm).PersonalLR; lr == nil || *lr != 0.03 {
		t.Errorf("algorithm.pfedme.personal_lr resolved to %v, want train.lr 0.03", lr)
	}
}

// TestMemoryFloorCountsThePersonalCopy: the floor counts the model as the algorithm wraps
// it: Ditto's two copies and every client's stored personal copy.
func TestMemoryFloorCountsThePersonalCopy(t *testing.T) {
	cfg := config.Default().Resolved()
	cfg.Train.Workers = 1 // one stack; client groups are checked below
	build, err := builder(cfg, cfg.Algorithm.Strategy(), 10, 1, 28, 28, cudaCPU)
	if err != nil {
		t.Fatal(err)
	}
	avg, err := memoryFloor(cfg, build)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Algorithm.Name = "ditto"
	ditto, err := memoryFloor(cfg, build)
	if err != nil {
		t.Fatal(err)
	}
	// fedavg: P·(1 + 3K + chunk) floats; ditto: 2P·(1 + 3K + chunk) + P·clients
	k := cfg.Train.Participation * float64(cfg.Data.Clients)
	if want := avg*2 + avg/(1+4*k)*float64(cfg.Data.Clients); ditto != want {
		t.Fatalf("ditto's floor %g bytes, want %g (fedavg's %g)", ditto, want, avg)
	}
	// two client groups on two threads: the groups hold K more rows, and each thread an
	// evaluation chunk of K: P·(1 + 3K + K + K + 2K)
	cfg.Algorithm.Name, cfg.Train.Workers = "fedavg", 2
	two, err := memoryFloor(cfg, build)
	if err != nil {
		t.Fatal(err)
	}
	if want := avg * (1 + 7*k) / (1 + 4*k); math.Abs(two-want) > 1e-9*want {
		t.Fatalf("two workers' floor %g bytes, want %g (one stack's %g)", two, want, avg)
	}
}

// TestPFedMeClientsChoosesWhoTrains: algorithm.pfedme.clients "sampled" (the default,
// FedTP's code) trains the round's sampled clients; "all" (the pFedMe paper's Alg. 1)
// trains every client every round; metrics.jsonl lists who trained.
func TestPFedMeClientsChoosesWhoTrains(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int // clients per round, of 4 at participation 0.5
	}{{"sampled", 2}, {"all", 4}} {
		cfg := smallRun(t.TempDir(), "pfedme")
		cfg.Algorithm.Name = "pfedme"
		fl.EditOwn(&cfg.Algorithm, func(o *algo.PFedMeSettings) { o.Clients, o.InnerSteps = c.value, 2 })
		res, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatalf("pfedme.clients %q: %v", c.value, err)
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct{ Clients []int }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Clients) != c.want {
				t.Errorf("pfedme.clients %q: a round trained clients %v, want %d of them", c.value, r.Clients, c.want)
			}
		}
	}
}
