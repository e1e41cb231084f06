// Package experiment runs a whole federated experiment from a typed configuration: load
// and partition the data, build the model, train with the chosen algorithm, and write the
// run directory (resolved config, partition manifest and heatmap, metrics.jsonl,
// summary.json, convergence and per-client plots).
package experiment

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/internal/defaults"
	"pfl/engine/model"
)

// Config is an experiment. Field tags name the YAML keys; zero values take the defaults
// documented on each field.
type Config struct {
	Name   string `mapstructure:"name"`   // run name; default the algorithm and dataset
	Out    string `mapstructure:"out"`    // parent folder of run directories; default "runs"
	Device string `mapstructure:"device"` // cpu, cuda or cuda:N; default cpu
	Seed   uint64 `mapstructure:"seed"`   // seed of every random stream; default 1

	Data      DataConfig      `mapstructure:"data"`
	Model     ModelConfig     `mapstructure:"model"`
	Algorithm AlgorithmConfig `mapstructure:"algorithm"`
	Train     TrainConfig     `mapstructure:"train"`
}

// DataConfig selects and partitions the dataset.
type DataConfig struct {
	Dataset          string  `mapstructure:"dataset"`            // a data.Open spec; default fashion-mnist
	Clients          int     `mapstructure:"clients"`            // default 50
	Partition        string  `mapstructure:"partition"`          // iid, dirichlet, pathological, pachinko, domain-dirichlet, coarse-groups; default dirichlet
	Convention       string  `mapstructure:"convention"`         // fedtp or fedperfix; default fedtp
	Alpha            float64 `mapstructure:"alpha"`              // Dirichlet concentration; default 0.5
	ClassesPerClient int     `mapstructure:"classes_per_client"` // pathological; default 2
	MinSize          int     `mapstructure:"min_size"`           // minimum samples per client; default 10
	HoldOut          float64 `mapstructure:"holdout"`            // novel-client fraction; default 0
	Noise            float64 `mapstructure:"noise"`              // feature-imbalance σ_max; default 0
	Augment          bool    `mapstructure:"augment"`            // pad-4 crop and flip; default off
}

// ModelConfig selects the model.
type ModelConfig struct {
	Preset string `mapstructure:"preset"` // a name from `pfl models`; default convnet
	Depth  int64  `mapstructure:"depth"`  // tiny-vit depth; default the preset's
}

// AlgorithmConfig selects the federated algorithm.
type AlgorithmConfig struct {
	Name string  `mapstructure:"name"` // fedavg, fedprox, local, fedper, fedrep, fedbabu, fedbn, vanilla-t, vanilla-attn, fedrod; default fedavg
	Mu   float64 `mapstructure:"mu"`   // FedProx's proximal weight; default 0.01
	// GenericLoss is FedRoD's loss on the generic head: "balanced" (balanced softmax, the
	// paper's) or "ce" (plain cross-entropy); default balanced.
	GenericLoss string `mapstructure:"generic_loss"`
}

// TrainConfig is the round loop.
type TrainConfig struct {
	Rounds        int     `mapstructure:"rounds"`        // default 50
	Participation float64 `mapstructure:"participation"` // fraction of clients per round; default 0.1
	Epochs        int     `mapstructure:"epochs"`        // local epochs; default 1
	Batch         int     `mapstructure:"batch"`         // default 64
	LR            float64 `mapstructure:"lr"`            // default 0.01
	Momentum      float64 `mapstructure:"momentum"`      // default 0
	WeightDecay   float64 `mapstructure:"weight_decay"`  // default 0
	EvalEvery     int     `mapstructure:"eval_every"`    // rounds between evaluations; default 5
	Sequential    bool    `mapstructure:"sequential"`    // train sampled clients one at a time (reference path)
	// CheckpointEvery saves the run every so many rounds (and on SIGINT/SIGTERM, and before
	// stopping on a NaN loss); default 10.
	CheckpointEvery int `mapstructure:"checkpoint_every"`
}

// Defaults fills zero fields with their documented defaults.
func (c *Config) Defaults() {
	defaults.Set(&c.Out, "runs")
	defaults.Set(&c.Device, "cpu")
	defaults.Set(&c.Seed, 1)
	d := &c.Data
	defaults.Set(&d.Dataset, "fashion-mnist")
	defaults.Set(&d.Clients, 50)
	defaults.Set(&d.Partition, "dirichlet")
	defaults.Set(&d.Convention, "fedtp")
	defaults.Set(&d.Alpha, 0.5)
	defaults.Set(&d.ClassesPerClient, 2)
	defaults.Set(&d.MinSize, 10)
	defaults.Set(&c.Model.Preset, "convnet")
	defaults.Set(&c.Algorithm.Name, "fedavg")
	defaults.Set(&c.Algorithm.Mu, 0.01)
	defaults.Set(&c.Algorithm.GenericLoss, "balanced")
	t := &c.Train
	defaults.Set(&t.Rounds, 50)
	defaults.Set(&t.Participation, 0.1)
	defaults.Set(&t.Epochs, 1)
	defaults.Set(&t.Batch, 64)
	defaults.Set(&t.LR, 0.01)
	defaults.Set(&t.EvalEvery, 5)
	defaults.Set(&t.CheckpointEvery, 10)
	defaults.Set(&c.Name, c.Algorithm.Name+"-"+c.Model.Preset)
}

// Strategies lists the algorithms by config name.
var Strategies = map[string]func(c AlgorithmConfig) fl.Strategy{
	"fedavg":       func(AlgorithmConfig) fl.Strategy { return fl.FedAvg() },
	"fedprox":      func(c AlgorithmConfig) fl.Strategy { return fl.FedProx{Mu: c.Mu} },
	"local":        func(AlgorithmConfig) fl.Strategy { return fl.Local() },
	"fedper":       func(AlgorithmConfig) fl.Strategy { return fl.FedPer() },
	"fedbn":        func(AlgorithmConfig) fl.Strategy { return fl.FedBN() },
	"fedrep":       func(AlgorithmConfig) fl.Strategy { return fl.FedRep{} },
	"fedbabu":      func(AlgorithmConfig) fl.Strategy { return fl.FedBABU{FineTuneSteps: 1} },
	"vanilla-t":    func(AlgorithmConfig) fl.Strategy { return fl.VanillaPersonalizedT() },
	"vanilla-attn": func(AlgorithmConfig) fl.Strategy { return fl.VanillaAttention() },
	"fedrod":       func(c AlgorithmConfig) fl.Strategy { return &fl.FedRoD{PlainSoftmax: c.GenericLoss == "ce"} },
}

// Validate checks what can be checked before loading data, naming the key and the choices.
func (c Config) Validate() error {
	if _, err := cuda.ParseDevice(c.Device); err != nil {
		return fmt.Errorf("device: %w", err)
	}
	if _, ok := Strategies[c.Algorithm.Name]; !ok {
		return fmt.Errorf("algorithm.name: unknown algorithm %q; choose one of %s", c.Algorithm.Name, names(Strategies))
	}
	if g := c.Algorithm.GenericLoss; g != "balanced" && g != "ce" {
		return fmt.Errorf("algorithm.generic_loss: %q; choose balanced or ce", g)
	}
	if _, err := model.Lookup(c.Model.Preset); err != nil {
		return fmt.Errorf("model.preset: %w", err)
	}
	if p := c.Train.Participation; !(p > 0 && p <= 1) {
		return fmt.Errorf("train.participation: %g, want (0, 1]", p)
	}
	if k := int(c.Train.Participation * float64(c.Data.Clients)); k < 1 {
		return fmt.Errorf("train.participation × data.clients = %g × %d selects no client", c.Train.Participation, c.Data.Clients)
	}
	if c.Train.Batch < 1 || c.Train.Rounds < 1 || c.Train.Epochs < 1 {
		return fmt.Errorf("train: rounds %d, epochs %d and batch %d must be >= 1", c.Train.Rounds, c.Train.Epochs, c.Train.Batch)
	}
	if c.Train.Momentum < 0 || c.Train.Momentum >= 1 {
		return fmt.Errorf("train.momentum: %g, want [0, 1)", c.Train.Momentum)
	}
	return nil
}

func names[V any](m map[string]V) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	s := ""
	for i, n := range out {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// partitionConfig maps the data section onto the partition's typed config.
func (c Config) partitionConfig() data.PartitionConfig {
	return data.PartitionConfig{Method: data.Method(c.Data.Partition), Convention: data.Convention(c.Data.Convention),
		Clients: c.Data.Clients, Seed: c.Seed, Alpha: c.Data.Alpha, ClassesPerClient: c.Data.ClassesPerClient,
		MinSize: c.Data.MinSize, HoldOut: c.Data.HoldOut, NoiseMax: c.Data.Noise}
}
