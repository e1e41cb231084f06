package config

import (
	"math"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
)

func TestValidateNamesTheKey(t *testing.T) {
	for _, c := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Algorithm.Name = "fedsgd" }, "algorithm.name"},
		{func(c *Config) { c.Model.Preset = "resnet" }, "model.preset"},
		{func(c *Config) { c.Note = "first line\nsecond line" }, "note"},
		{func(c *Config) { c.Train.Participation = 0.01; c.Data.Clients = 10 }, "selects no client"},
		{func(c *Config) { c.Train.Participation = 2 }, "participation"},
		{func(c *Config) { c.Train.Momentum = 1 }, "momentum"},
		{func(c *Config) { c.Algorithm.Generate = []string{"attention"} }, "algorithm.generate"},
		{func(c *Config) { c.Algorithm.Hyper.Layers = -1 }, "algorithm.hyper"},
		{func(c *Config) { c.Algorithm.GenericLoss = "focal" }, "algorithm.generic_loss"},
		{func(c *Config) { c.Data.Normalize = "imagenet" }, "data.normalize"},
		{func(c *Config) { c.Data.Channels = 2 }, "channels"},
		{func(c *Config) { c.Novel.Tune = []string{"head"} }, "novel.tune"},
		{func(c *Config) { c.Train.Precision = "fp16" }, "train.precision"},
		{func(c *Config) { c.Train.EvalChunk = -1 }, "train.eval_chunk"},
		{func(c *Config) { c.Train.EvalBatch = -1 }, "train.eval_batch"},
		{func(c *Config) { c.Train.Workers = -1 }, "train.workers"},
		{func(c *Config) { c.Train.Workers = 2; c.Train.Sequential = true }, "train.workers"},
		{func(c *Config) { c.Train.Workers = 2; c.Device = cuda.CUDA(0) }, "train.workers"},
		{func(c *Config) { c.Train.Stack = -1 }, "train.stack"},
		{func(c *Config) { c.Train.Stack = 1; c.Train.Sequential = true }, "train.stack"},
		{func(c *Config) { c.Train.Stack = 1; c.Device = cuda.CUDA(0) }, "train.stack"},
		{func(c *Config) { c.Data.Partition = "file" }, "data.partition_file: empty"},
		{func(c *Config) { c.Data.PartitionFile = "p.json" }, "data.partition_file: set with partition dirichlet"},
		{func(c *Config) { c.Data.Partition = "file"; c.Data.PartitionFile = "p.json"; c.Data.TrainSamples = 100 },
			"data.partition: file with train_samples"},
	} {
		cfg := Default().Resolved()
		c.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

func TestExplicitZerosAreHonoured(t *testing.T) {
	cfg := Default()
	cfg.Algorithm.Mu, cfg.Algorithm.Hyper.Momentum, cfg.Algorithm.Hyper.WeightDecay = 0, 0, 0
	cfg = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Algorithm.Name = "fedprox"
	if p, ok := cfg.Algorithm.Strategy().(algo.FedProx); !ok || p.Mu != 0 {
		t.Fatalf("fedprox with mu 0 became %+v", p)
	}
	cfg.Algorithm.Name = "fedtp"
	if f := cfg.Algorithm.Strategy().(*algo.FedTP); f.Hyper.Momentum >= 0 || f.Hyper.WeightDecay >= 0 {
		t.Fatalf("hypernetwork momentum and weight decay 0 became %g and %g (want none: negative)", f.Hyper.Momentum, f.Hyper.WeightDecay)
	}
	zero := Default()
	zero.Train.Rounds = 0
	if err := zero.Resolved().Validate(); err == nil || !strings.Contains(err.Error(), "train.rounds") {
		t.Fatalf("rounds 0: %v", err)
	}
}

func TestValidateRefusesEveryBadValue(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		mutate func(*Config)
		key    string
	}{
		{func(c *Config) { c.Model.Depth = new(int64(-3)) }, "model.depth"},
		{func(c *Config) { c.Model.Dim = new(int64(64)) }, "model.dim"}, // convnet has no dim
		// a size set to 0 would build the preset's size while config.json records 0
		{func(c *Config) { c.Model.Preset, c.Model.Depth = "tiny-vit", new(int64(0)) }, "model.depth"},
		{func(c *Config) { c.Model.Preset, c.Model.Heads = "tiny-vit", new(int64(0)) }, "model.heads"},
		{func(c *Config) { c.Model.Preset, c.Model.Patch = "tiny-vit", new(int64(0)) }, "model.patch"},
		// and a plug-in field set to 0 would be the algorithm's default
		{func(c *Config) {
			c.Model.Preset, c.Algorithm.Name, c.Model.Prefix.Mid = "tiny-vit", "fedperfix", new(int64(0))
		}, "model.prefix.mid"},
		{func(c *Config) {
			c.Model.Preset, c.Algorithm.Name, c.Model.Prefix.Scale = "tiny-vit", "fedperfix", new(0.0)
		}, "model.prefix.scale"},
		{func(c *Config) {
			c.Model.Preset, c.Algorithm.Name, c.Model.Prompts = "tiny-vit", "prompts", new(int64(0))
		}, "model.prompts"},
		{func(c *Config) {
			c.Model.Preset, c.Algorithm.Name, c.Model.Adapter.Mid = "tiny-vit", "adapters", new(int64(0))
		}, "model.adapter.mid"},
		{func(c *Config) { c.Data.TrainSamples = -5 }, "data.train_samples"},
		{func(c *Config) { c.Data.MinSize = -3 }, "data.min_size"},
		{func(c *Config) { c.Data.Alpha = nan }, "data.alpha"},
		{func(c *Config) { c.Data.Noise = inf }, "data.noise"},
		{func(c *Config) { c.Data.HoldOut = 1 }, "data.holdout"},
		{func(c *Config) { c.Train.TailRounds = -5 }, "train.tail_rounds"},
		{func(c *Config) { c.Train.CheckpointEvery = -1 }, "train.checkpoint_every"},
		{func(c *Config) { c.Train.EvalEvery = -1 }, "train.eval_every"},
		{func(c *Config) { c.Train.WeightDecay = -1 }, "train.weight_decay"},
		{func(c *Config) { c.Train.LR = inf }, "train.lr"},
		{func(c *Config) { c.Train.LR = 0 }, "train.lr"},
		{func(c *Config) { c.Train.Participation = 0 }, "train.participation"},
		{func(c *Config) { c.Algorithm.Mu = -1 }, "algorithm.mu"},
		{func(c *Config) { c.Algorithm.Hyper.Momentum = -0.5 }, "algorithm.hyper.momentum"},
		{func(c *Config) { c.Algorithm.Hyper.Hidden = new(int64) }, "algorithm.hyper.hidden"},
		{func(c *Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedHNConfig) { o.InnerSteps = -1 }) }, "algorithm.pfedhn.inner_steps"},
		{func(c *Config) { fl.EditOwn(&c.Algorithm, func(o *algo.PFedHNConfig) { o.Clip = nan }) }, "algorithm.pfedhn.clip"},
		{func(c *Config) { c.Algorithm.Name, c.Algorithm.Generate = "pfedhn", []string{"mlp"} }, "algorithm.generate"},
		{func(c *Config) { c.Name = "../x" }, "name"},
		{func(c *Config) { c.Suite = []string{"fedavg", "fedavg"} }, "suite"},
		{func(c *Config) { c.Model.Prefix.Mid = new(int64(8)) }, "model.prefix"},                                    // convnet takes no plug-ins
		{func(c *Config) { c.Model.Preset, c.Model.Prefix.Mid = "tiny-vit", new(int64(8)) }, "model.prefix.blocks"}, // fedavg adds no blocks
		{func(c *Config) { c.Model.Preset, c.Model.Prefix.Kind = "tiny-vit", "lora" }, "model.prefix.kind"},
		{func(c *Config) { c.Model.Preset, c.Model.Prefix.Scale = "tiny-vit", new(nan) }, "model.prefix.scale"},
		{func(c *Config) { c.Model.Preset, c.Model.Adapter.Scale = "tiny-vit", new(2.0) }, "model.adapter.mid"},
		{func(c *Config) { c.Algorithm.Name, c.Algorithm.LocalRoles = "partial", []string{"attention"} }, "algorithm.local_roles"},
		{func(c *Config) { c.Algorithm.Name = "partial" }, "algorithm.local_roles"},
		{func(c *Config) { c.Algorithm.Name, c.Algorithm.LocalBlocks = "fedperfix", []int{-1} }, "algorithm.local_blocks"},
		{func(c *Config) { c.Train.EvalProtocol = "before" }, "train.eval_protocol"},
		{func(c *Config) { c.Algorithm.Name, c.Algorithm.LocalClients = "local", "some" }, "algorithm.local_clients"},
		{func(c *Config) { c.Novel.ConvergeWithin = 2 }, "novel.converge_within"},
	} {
		cfg := Default()
		c.mutate(&cfg)
		err := cfg.Resolved().Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.key+":") {
			t.Errorf("error %v, want one starting with %q", err, c.key)
		}
	}
}
