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
	"pfl/engine/hyper"
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

	// Suite lists algorithms to compare: the experiment runs once per name, everything else
	// equal, and writes a results table and one plot with all curves (RunSuite). Empty:
	// one run of algorithm.name.
	Suite []string `mapstructure:"suite"`

	Data      DataConfig      `mapstructure:"data"`
	Model     ModelConfig     `mapstructure:"model"`
	Algorithm AlgorithmConfig `mapstructure:"algorithm"`
	Train     TrainConfig     `mapstructure:"train"`
	Novel     NovelConfig     `mapstructure:"novel"`
}

// NovelConfig is the novel-client study (FedTP paper §IV-B.7, Fig. 8), run after training
// when data.holdout holds clients out: each novel client fine-tunes its personal part on
// its training split, and its test accuracy is recorded before and after every epoch.
type NovelConfig struct {
	Epochs int     `mapstructure:"epochs"` // fine-tuning epochs; default 5
	LR     float64 `mapstructure:"lr"`     // plain SGD learning rate; default train.lr
	// Tune lists what FedTP fine-tunes, one study each: embedding (the client's embedding
	// only) and/or hypernetwork (the whole hypernetwork, a private copy per client);
	// default both. Other algorithms fine-tune their personal parameters (the whole model
	// when they have none).
	Tune []string `mapstructure:"tune"`
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
	// TrainSamples and TestSamples keep a random subset of that many images of the
	// official train and test sets (drawn from the run's seed) before partitioning; 0 keeps
	// all. For demos and quick checks.
	TrainSamples int `mapstructure:"train_samples"`
	TestSamples  int `mapstructure:"test_samples"`
	// TrainFrac is each client's training share under the fedperfix convention; default
	// 0.75 (FedPerfix's CIFAR-100 and OrganAMNIST; its Office-Home uses 0.85).
	TrainFrac float64 `mapstructure:"train_frac"`
	// ImageSize resizes every batch to ImageSize×ImageSize on the device (bilinear, as
	// FedPerfix's 224×224 input); 0 keeps the stored size.
	ImageSize int `mapstructure:"image_size"`
	// Channels 3 repeats a grey dataset's channel (OrganAMNIST for an RGB ViT); 0 keeps it.
	Channels int `mapstructure:"channels"`
	// Normalize is "dataset" (the training set's channel mean and std) or "half" (mean = std
	// = 0.5, FedPerfix's transform); default dataset.
	Normalize string `mapstructure:"normalize"`
	// SeqLen is the characters a text model reads per sequence (FedTP's layout: every
	// window of SeqLen+1 characters is a sequence; FedTP's script uses 10); default 80,
	// LEAF's (whose JSON fixes it).
	SeqLen int `mapstructure:"seq_len"`
}

// ModelConfig selects the model. The size keys reshape the tiny-vit presets (FedTP's ViT);
// zero keeps the preset's value.
type ModelConfig struct {
	Preset  string `mapstructure:"preset"`   // a name from `pfl models`; default convnet
	Depth   int64  `mapstructure:"depth"`    // tiny-vit blocks; default the preset's (6 or 8)
	Patch   int64  `mapstructure:"patch"`    // tiny-vit patch side; default 4 (must divide the image side)
	Dim     int64  `mapstructure:"dim"`      // tiny-vit token width; default 128
	Heads   int64  `mapstructure:"heads"`    // tiny-vit attention heads; default 8
	HeadDim int64  `mapstructure:"head_dim"` // tiny-vit head width; default 64
	MLP     int64  `mapstructure:"mlp"`      // tiny-vit feed-forward width; default 256
}

// AlgorithmConfig selects the federated algorithm.
type AlgorithmConfig struct {
	Name string  `mapstructure:"name"` // fedavg, fedprox, local, fedper, fedrep, fedbabu, fedbn, vanilla-t, vanilla-attn, fedrod, fedtp, fedtp-per, fedtp-rod, fedtp-knn; default fedavg
	Mu   float64 `mapstructure:"mu"`   // FedProx's proximal weight; default 0.01
	// GenericLoss is FedRoD's loss on the generic head: "balanced" (balanced softmax, the
	// paper's) or "ce" (plain cross-entropy); default balanced.
	GenericLoss string `mapstructure:"generic_loss"`
	// Generate lists the roles FedTP's hypernetwork generates (the paper's Table V
	// ablation): role names from `pfl models`, or "encoder" for attn_qkv, attn_out, mlp
	// and norm; default [attn_qkv].
	Generate []string    `mapstructure:"generate"`
	Hyper    HyperConfig `mapstructure:"hyper"`
	KNN      KNNConfig   `mapstructure:"knn"`
}

// KNNConfig is FedTP+KNN's evaluation (official code's values).
type KNNConfig struct {
	K      int     `mapstructure:"k"`      // neighbours; default 10
	Weight float64 `mapstructure:"weight"` // weight of the neighbours' vote against the model's softmax; default 0.6
}

// HyperConfig is FedTP's hypernetwork and its optimizer (official code's values).
type HyperConfig struct {
	Embed       int64   `mapstructure:"embed"`        // client-embedding width; default 128 (paper's novel-client study: 32)
	Hidden      int64   `mapstructure:"hidden"`       // trunk width; default 150
	Layers      int     `mapstructure:"layers"`       // trunk linear layers; default 4
	LR          float64 `mapstructure:"lr"`           // β; default train.lr (the official code uses --lr for both)
	Momentum    float64 `mapstructure:"momentum"`     // default 0.9; negative for none
	WeightDecay float64 `mapstructure:"weight_decay"` // default 1e-3; negative for none
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
	// EvalChunk is how many clients one stacked evaluation pass holds (larger: fewer,
	// bigger passes, more device memory for one more stacked model); default the clients
	// per round.
	EvalChunk int `mapstructure:"eval_chunk"`
	// TailRounds is the window of FedTP's protocol: summary.json's tail_mean ± tail_std
	// averages the evaluations of the last TailRounds rounds; default 200 (the paper's).
	TailRounds int  `mapstructure:"tail_rounds"`
	Sequential bool `mapstructure:"sequential"` // train sampled clients one at a time (reference path)
	// Precision is fp32 (float32 throughout), tf32 (float32, with CUDA matmuls in TF32;
	// the same as fp32 on the CPU) or bf16 (the models' forward and backward under bf16
	// autocast over float32 weights; optimizer, aggregation and the hypernetwork in
	// float32); default fp32.
	Precision string `mapstructure:"precision"`
	// Eager runs every training step eagerly on a CUDA device instead of capturing each
	// phase's step once as a CUDA graph and replaying it (default false: graphs on CUDA;
	// the CPU always runs eagerly). For comparing the two, or if a capture misbehaves.
	Eager bool `mapstructure:"eager"`
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
	defaults.Set(&d.Normalize, "dataset")
	defaults.Set(&d.SeqLen, 80)
	defaults.Set(&c.Model.Preset, "convnet")
	defaults.Set(&c.Algorithm.Name, "fedavg")
	defaults.Set(&c.Algorithm.Mu, 0.01)
	defaults.Set(&c.Algorithm.GenericLoss, "balanced")
	defaults.Set(&c.Algorithm.KNN.K, 10)
	defaults.Set(&c.Algorithm.KNN.Weight, 0.6)
	if len(c.Algorithm.Generate) == 0 {
		c.Algorithm.Generate = []string{"attn_qkv"}
	}
	t := &c.Train
	defaults.Set(&t.Rounds, 50)
	defaults.Set(&t.Participation, 0.1)
	defaults.Set(&t.Epochs, 1)
	defaults.Set(&t.Batch, 64)
	defaults.Set(&t.LR, 0.01)
	defaults.Set(&t.EvalEvery, 5)
	defaults.Set(&t.TailRounds, 200)
	defaults.Set(&t.Precision, "fp32")
	defaults.Set(&t.CheckpointEvery, 10)
	defaults.Set(&c.Novel.Epochs, 5)
	defaults.Set(&c.Novel.LR, c.Train.LR)
	if len(c.Novel.Tune) == 0 {
		c.Novel.Tune = []string{fl.TuneEmbedding, fl.TuneHypernetwork}
	}
	h := &c.Algorithm.Hyper
	defaults.Set(&h.Embed, 128)
	defaults.Set(&h.Hidden, 150)
	defaults.Set(&h.Layers, 4)
	defaults.Set(&h.LR, c.Train.LR)
	defaults.Set(&h.Momentum, 0.9)
	defaults.Set(&h.WeightDecay, 1e-3)
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
	"fedtp":        func(c AlgorithmConfig) fl.Strategy { return fedTP(c) },
	"fedtp-per": func(c AlgorithmConfig) fl.Strategy {
		f := fedTP(c)
		f.Local = []model.Role{model.RoleHead}
		return f
	},
	"fedtp-knn": func(c AlgorithmConfig) fl.Strategy {
		f := fedTP(c)
		f.KNN = fl.KNN{K: c.KNN.K, Weight: c.KNN.Weight}
		return f
	},
	"fedtp-rod": func(c AlgorithmConfig) fl.Strategy {
		f := fedTP(c)
		f.RoD = true
		return f
	},
}

// fedTP makes FedTP from a validated config.
func fedTP(c AlgorithmConfig) *fl.FedTP {
	h := c.Hyper
	roles, _ := generatedRoles(c.Generate)
	return &fl.FedTP{Roles: roles, Hyper: hyper.Config{Embed: h.Embed, Hidden: h.Hidden, Layers: h.Layers,
		LR: h.LR, Momentum: h.Momentum, WeightDecay: h.WeightDecay}}
}

// generatedRoles reads algorithm.generate.
func generatedRoles(names []string) ([]model.Role, error) {
	var out []model.Role
	for _, n := range names {
		if n == "encoder" {
			out = append(out, model.RoleAttnQKV, model.RoleAttnOut, model.RoleMLP, model.RoleNorm)
			continue
		}
		r, ok := model.ParseRole(n)
		if !ok {
			var valid []string
			for _, r := range model.Roles() {
				valid = append(valid, r.String())
			}
			return nil, fmt.Errorf("algorithm.generate: unknown role %q; choose encoder or one of %v", n, valid)
		}
		out = append(out, r)
	}
	return out, nil
}

// Validate checks what can be checked before loading data, naming the key and the choices.
func (c Config) Validate() error {
	if _, err := cuda.ParseDevice(c.Device); err != nil {
		return fmt.Errorf("device: %w", err)
	}
	if _, ok := Strategies[c.Algorithm.Name]; !ok {
		return fmt.Errorf("algorithm.name: unknown algorithm %q; choose one of %s", c.Algorithm.Name, names(Strategies))
	}
	for _, a := range c.Suite {
		if _, ok := Strategies[a]; !ok {
			return fmt.Errorf("suite: unknown algorithm %q; choose from %s", a, names(Strategies))
		}
	}
	if p := c.Train.Precision; p != "fp32" && p != "tf32" && p != "bf16" {
		return fmt.Errorf("train.precision: %q; choose fp32, tf32 or bf16", p)
	}
	if c.Train.EvalChunk < 0 {
		return fmt.Errorf("train.eval_chunk: %d; want >= 1 clients per pass (0: the clients per round)", c.Train.EvalChunk)
	}
	if n := c.Data.Normalize; n != "dataset" && n != "half" {
		return fmt.Errorf("data.normalize: %q; choose dataset or half", n)
	}
	if c.Data.ImageSize < 0 || (c.Data.Channels != 0 && c.Data.Channels != 3) || c.Data.TrainFrac < 0 || c.Data.TrainFrac >= 1 {
		return fmt.Errorf("data: image_size %d must be >= 0, channels %d 0 or 3, train_frac %g in [0, 1)", c.Data.ImageSize, c.Data.Channels, c.Data.TrainFrac)
	}
	if _, err := generatedRoles(c.Algorithm.Generate); err != nil {
		return err
	}
	if h := c.Algorithm.Hyper; h.Embed < 1 || h.Hidden < 1 || h.Layers < 1 || !(h.LR > 0) || h.Momentum >= 1 {
		return fmt.Errorf("algorithm.hyper: embed %d, hidden %d and layers %d must be >= 1, lr %g > 0 and momentum %g < 1", h.Embed, h.Hidden, h.Layers, h.LR, h.Momentum)
	}
	if k := c.Algorithm.KNN; k.K < 1 || k.Weight < 0 || k.Weight > 1 {
		return fmt.Errorf("algorithm.knn: k %d must be >= 1 and weight %g in [0, 1]", k.K, k.Weight)
	}
	for _, m := range c.Novel.Tune {
		if err := (fl.NovelConfig{Mode: m}).Validate(); err != nil {
			return fmt.Errorf("novel.tune: %q; choose %s or %s", m, fl.TuneEmbedding, fl.TuneHypernetwork)
		}
	}
	if n := c.Novel; n.Epochs < 1 || !(n.LR > 0) {
		return fmt.Errorf("novel: epochs %d must be >= 1 and lr %g > 0", n.Epochs, n.LR)
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
		MinSize: c.Data.MinSize, HoldOut: c.Data.HoldOut, NoiseMax: c.Data.Noise, TrainFrac: c.Data.TrainFrac}
}
