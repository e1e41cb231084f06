// Package config is an experiment's configuration: its schema (Config, whose fields
// document their defaults), the defaults, the values that follow others (Resolved), the
// checks (Validate), the runs a config makes (Members, NewGrid) and the one loader that
// reads a config from its sources (Load: a YAML file or a run's config.json, PFL_*
// variables, --set) with one grammar for every value written as text. A program loads a
// YAML file exactly as pfl train does with LoadFile.
package config

import (
	"fmt"
	"slices"
	"strings"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	// the built-in algorithms register themselves in fl's registry, which validation
	// and every run read: a program that loads a config has them
	_ "pfl/engine/fl/algo"
	"pfl/engine/internal/defaults"
	"pfl/engine/model"
)

// Config is an experiment. The fields' json tags name the keys (in YAML, config.json,
// --set and PFL_* variables alike). Default
// holds the default documented on each field; a config file or program changes the fields
// it names, and every value it sets is used as given or refused by Validate, never replaced
// by a default (a zero is a value like any other).
type Config struct {
	// Name is the run's folder under Out: a plain name of at most 249 bytes, without
	// slashes, control characters or a leading dot; default the algorithm and the model.
	Name string `mapstructure:"name" json:"name"`
	Out  string `mapstructure:"out" json:"out"` // parent folder of run directories; default "runs"
	// Device is cpu, cuda (device 0) or cuda:N; default cpu. It is parsed once, where the
	// config is read, and config.json writes it as cpu or cuda:N.
	Device cuda.Device `mapstructure:"device" json:"device"`
	Seed   uint64      `mapstructure:"seed" json:"seed"` // seed of every random stream; default 1

	// Suite lists algorithms to compare: the experiment runs once per entry, everything
	// else equal, and writes a results table and one plot with all curves (RunSuite). An
	// entry is an algorithm name, or "<label>: <key>=<value>; ..." — a member with some
	// keys of its own (FedPerfix's sensitivity study: "mlp+head: algorithm.name=partial;
	// algorithm.local_roles=[mlp, head]"). Empty: one run of algorithm.name.
	Suite []string `mapstructure:"suite" json:"suite"`
	// SuiteTable adds a table in a paper's layout to the suite's results.md: "sensitivity"
	// (FedPerfix Table 1: each partial member by its local roles, stand-alone and with the
	// head, and their mean); default none ("").
	SuiteTable string `mapstructure:"suite_table" json:"suite_table"`
	// Note is printed under a suite's results table as written (what the config's author
	// measured about its members, such as a method that shows no advantage at this size);
	// default none ("").
	Note string `mapstructure:"note" json:"note,omitempty"`

	// Seeds runs the experiment (every suite member at every sweep point) once per seed,
	// each run in its own seed-<s> directory, and reports the mean ± std across seeds of
	// each run's metrics (RunGrid); unset: one run with seed. An empty list, and seed and
	// seeds set together, are errors.
	Seeds []uint64 `mapstructure:"seeds" json:"seeds,omitempty"`
	// Sweep is a grid over config keys: the experiment (the suite, every seed) runs once
	// per combination of the listed values, each point in its own directory named from its
	// values ("data.alpha=0.1"), with one table and one plot per metric over the points
	// (RunGrid). A value is written as a suite member's ("0.1", "[mlp, head]", "fedavg");
	// the YAML form is a mapping from dotted keys to lists, in the order written. Empty:
	// no sweep.
	Sweep []SweepAxis `mapstructure:"-" json:"sweep,omitempty"`

	Data  Data  `mapstructure:"data" json:"data"`
	Model Model `mapstructure:"model" json:"model"`
	// Algorithm is the algorithm section (algorithm.*): its keys, defaults and checks
	// belong to the algorithms (fl.Settings, each algorithm's section in its own file).
	Algorithm fl.Settings `mapstructure:"algorithm" json:"algorithm"`
	Train     Train       `mapstructure:"train" json:"train"`
	Novel     Novel       `mapstructure:"novel" json:"novel"`
}

// Novel is the novel-client study (FedTP paper §IV-B.7, Fig. 8), run after training
// when data.holdout holds clients out: each novel client fine-tunes its personal part on
// its training split, and its test accuracy is recorded before and after every epoch.
type Novel struct {
	Epochs int      `mapstructure:"epochs" json:"epochs"` // fine-tuning epochs; default 5
	LR     *float64 `mapstructure:"lr" json:"lr"`         // plain SGD learning rate; default (unset) train.lr
	// Tune lists what FedTP fine-tunes, one study each: embedding (the client's embedding
	// only) and/or hypernetwork (the whole hypernetwork, a private copy per client);
	// default both. Other algorithms fine-tune their personal parameters (the whole model
	// when they have none).
	Tune []string `mapstructure:"tune" json:"tune"`
	// ConvergeWithin defines "epochs to converge" (TransFed Table 4's "convergence time",
	// which the paper does not define): the first fine-tuning epoch from which the novel
	// clients' micro accuracy stays within this distance of its value at the last epoch;
	// default 0.01 (one percentage point).
	ConvergeWithin float64 `mapstructure:"converge_within" json:"converge_within"`
}

// Data selects and partitions the dataset.
type Data struct {
	Dataset   string `mapstructure:"dataset" json:"dataset"`     // a data.Open spec; default fashion-mnist
	Clients   int    `mapstructure:"clients" json:"clients"`     // clients the data is spread over; default 50
	Partition string `mapstructure:"partition" json:"partition"` // iid, dirichlet, pathological, pachinko, domain-dirichlet, coarse-groups, file; default dirichlet
	// PartitionFile is the JSON file that partition: file reads (data.IndexFile): each
	// client's training and test indices into the stored dataset, as another implementation
	// drew them, so that pfl and it train the same clients. Only with partition file, and
	// without train_samples or test_samples (the indices name stored samples). One JSON
	// object: anything after it (text, a second object) is refused.
	PartitionFile    string  `mapstructure:"partition_file" json:"partition_file,omitempty"`
	Convention       string  `mapstructure:"convention" json:"convention"`                 // fedtp or fedperfix; default fedtp
	Alpha            float64 `mapstructure:"alpha" json:"alpha"`                           // Dirichlet concentration; default 0.5
	ClassesPerClient int     `mapstructure:"classes_per_client" json:"classes_per_client"` // pathological; default 2
	MinSize          int     `mapstructure:"min_size" json:"min_size"`                     // minimum samples per client; default 10
	HoldOut          float64 `mapstructure:"holdout" json:"holdout"`                       // novel-client fraction; default 0
	Noise            float64 `mapstructure:"noise" json:"noise"`                           // feature-imbalance σ_max; default 0
	Augment          bool    `mapstructure:"augment" json:"augment"`                       // pad-4 crop and flip; default off
	// TrainSamples and TestSamples keep a random subset of that many images of the
	// official train and test sets (drawn from the run's seed) before partitioning; 0 keeps
	// all. For demos and quick checks.
	TrainSamples int `mapstructure:"train_samples" json:"train_samples"`
	TestSamples  int `mapstructure:"test_samples" json:"test_samples"`
	// Stratified makes those subsets keep the same number of images of every class.
	Stratified bool `mapstructure:"stratified" json:"stratified"`
	// PadTo zero-pads every image to PadTo×PadTo on the host, centred, before anything
	// else (28×28 Fashion-MNIST packed into CIFAR's 32×32 layout); 0 keeps the stored size.
	PadTo int `mapstructure:"pad_to" json:"pad_to"`
	// TrainFrac is each client's training share under the fedperfix convention; default
	// 0.75 (FedPerfix's CIFAR-100 and OrganAMNIST; its Office-Home uses 0.85).
	TrainFrac float64 `mapstructure:"train_frac" json:"train_frac"`
	// ImageSize resizes every batch to ImageSize×ImageSize on the device (bilinear, as
	// FedPerfix's 224×224 input); 0 keeps the stored size.
	ImageSize int `mapstructure:"image_size" json:"image_size"`
	// Channels 3 repeats a grey dataset's channel (OrganAMNIST for an RGB ViT); 0 keeps it.
	Channels int `mapstructure:"channels" json:"channels"`
	// Normalize chooses each channel's mean and std: "dataset" (the training split's own
	// statistics), "half" (0.5 and 0.5, FedPerfix's transform), "cifar10" or "cifar100" (the
	// fixed constants FedTP's official code uses for those datasets, whatever the data), or
	// "auto": the official code's constants for a CIFAR-10 or CIFAR-100 dataset, else the
	// dataset's statistics. Default auto; config.json records what auto chose.
	Normalize string `mapstructure:"normalize" json:"normalize"`
	// SeqLen is the characters a text model reads per sequence (FedTP's layout: every
	// window of SeqLen+1 characters is a sequence; FedTP's script uses 10); default 80,
	// LEAF's (whose JSON fixes it).
	SeqLen int `mapstructure:"seq_len" json:"seq_len"`
	// Download fetches the dataset into pfl's data folder (fetch.Root, $PFL_DATA) from its
	// official address, checked against its published checksum, when it is neither where
	// data.dataset says nor fetched already (as pfl data get does); default false: a missing
	// dataset is an error naming pfl data get. config.json leaves it out unless true.
	Download bool `mapstructure:"download" json:"download,omitempty"`
}

// Model selects the model. The size keys reshape the presets that take them (the
// ViTs, FocalNets, ResNets and the text Transformer; `pfl models` lists each preset's
// sizes). Unset (nil, null in config.json) a size is the preset's; a size that is set is
// used, and must be at least 1: the model code reads 0 as "the preset's", so an explicit 0
// would train another model than the one config.json records.
type Model struct {
	Preset  string `mapstructure:"preset" json:"preset"`     // a name from `pfl models`; default convnet
	Depth   *int64 `mapstructure:"depth" json:"depth"`       // blocks (every stage's); default the preset's (tiny-vit 6)
	Patch   *int64 `mapstructure:"patch" json:"patch"`       // patch side; default the preset's (tiny-vit 4; must divide the image side)
	Dim     *int64 `mapstructure:"dim" json:"dim"`           // token width; default the preset's (tiny-vit 128)
	Heads   *int64 `mapstructure:"heads" json:"heads"`       // attention heads; default the preset's (tiny-vit 8)
	HeadDim *int64 `mapstructure:"head_dim" json:"head_dim"` // head width; default the preset's (tiny-vit 64)
	MLP     *int64 `mapstructure:"mlp" json:"mlp"`           // feed-forward width; default the preset's (tiny-vit 256)

	// Plug-ins of the ViT presets (FedPerfix Table 6). Unset, a field keeps the preset's
	// (none, or vit-s16-perfix's prefix); fedperfix, prompts and adapters add their own
	// plug-in with their defaults, and any field set here replaces that default (so a set
	// field, like a size, must be positive).
	Prefix  Prefix  `mapstructure:"prefix" json:"prefix"`
	Prompts *int64  `mapstructure:"prompts" json:"prompts"` // deep prompt tokens per block; fedperfix's prompts variant: 10
	Adapter Adapter `mapstructure:"adapter" json:"adapter"`
}

// Prefix is FedPerfix's K/V prefix adapter (§3.5, Eq. 4): in the last Blocks blocks,
// Tanh(norm1(x) W_down) W_up gives per-token K and V offsets added, times Scale, to the
// attention's K and V (the official code's additive form).
//
// Kind, Form and Init choose among the prefixes of FedPerfix's Table 6: kind adapter
// (Eq. 4), linear (the official code's vanilla prefix: one Linear per block) or tokens
// (Eq. 3's prefix tokens, Length per block); form add (the official code: offsets added
// to K and V) or concat (the paper's Eq. 3/5: prefixes as extra keys and values); init
// default (PyTorch's) or zero. fedperfix uses adapter/add, prefix-z and prefix-r
// linear/add with init zero and default.
type Prefix struct {
	Blocks *int64   `mapstructure:"blocks" json:"blocks"` // the last Blocks blocks get one; fedperfix, prefix-z/r: all
	Mid    *int64   `mapstructure:"mid" json:"mid"`       // adapter bottleneck width; fedperfix: 256 (official preset)
	Scale  *float64 `mapstructure:"scale" json:"scale"`   // s; fedperfix, prefix-z/r: 1.5 (official preset)
	Kind   string   `mapstructure:"kind" json:"kind"`     // adapter, linear or tokens; default ("") the algorithm's (adapter)
	Form   string   `mapstructure:"form" json:"form"`     // add or concat; default ("") add (concat for tokens)
	Init   string   `mapstructure:"init" json:"init"`     // default or zero; default ("") the algorithm's
	Length *int64   `mapstructure:"length" json:"length"` // prefix tokens per block (kind tokens); prefix-z/r: 10
}

// Adapter is an adapter x + Scale·W_up Tanh(W_down x) after every block's MLP
// (zero-initialized W_up: it starts as the identity).
type Adapter struct {
	Mid   *int64   `mapstructure:"mid" json:"mid"`     // bottleneck width; the adapters variant: 512 (official --mid_dim)
	Scale *float64 `mapstructure:"scale" json:"scale"` // adapters variant: 1
	// Shared uses one adapter in every block, as FedPerfix's official adapter code does;
	// default false (the paper's adapter per block).
	Shared bool `mapstructure:"shared" json:"shared"`
}

// Train is the round loop.
type Train struct {
	Rounds        int     `mapstructure:"rounds" json:"rounds"`               // default 50
	Participation float64 `mapstructure:"participation" json:"participation"` // fraction of clients per round; default 0.1
	Epochs        int     `mapstructure:"epochs" json:"epochs"`               // local epochs; default 1
	Batch         int     `mapstructure:"batch" json:"batch"`                 // default 64
	LR            float64 `mapstructure:"lr" json:"lr"`                       // default 0.01
	Momentum      float64 `mapstructure:"momentum" json:"momentum"`           // default 0
	WeightDecay   float64 `mapstructure:"weight_decay" json:"weight_decay"`   // default 0
	// DropLast drops each epoch's last partial step of local training, as PyTorch's
	// DataLoader(drop_last=True) with one step's samples as its batch (Per-FedAvg's: two
	// batches): PFLlib's clients load their training data so, and a client with fewer
	// samples than a step then trains none (a run where no client takes a step is
	// refused, naming the keys; one where some do not is warned of). Default false: every
	// sample every epoch, the
	// last batch partial, as the FedTP code (for its transformers),
	// FedPerfix's, pFedHN's and pFedGP's load it.
	DropLast  bool `mapstructure:"drop_last" json:"drop_last"`
	EvalEvery int  `mapstructure:"eval_every" json:"eval_every"` // rounds between evaluations; default 5
	// EvalChunk is how many clients one stacked evaluation pass holds (larger: fewer,
	// bigger passes, more device memory for one more stacked model); default the clients
	// per round.
	EvalChunk int `mapstructure:"eval_chunk" json:"eval_chunk"`
	// EvalBatch is how many test samples of each client one stacked evaluation pass
	// holds (no gradients are kept, so it can be larger than train.batch where memory
	// allows); default 0: train.batch.
	EvalBatch int `mapstructure:"eval_batch" json:"eval_batch"`
	// EvalProtocol is when an evaluation sees each client's model: "fedtp" (every client
	// after the server update: the new global shared part with its personal part, FedTP's
	// official code) or "fedperfix" (every client before the server update: the round's
	// trained clients with their trained models, the others with the global part the
	// round started from, FedPerfix's official code);
	// default fedtp. results.md names the protocol of every table.
	EvalProtocol string `mapstructure:"eval_protocol" json:"eval_protocol"`
	// TailRounds is the window of FedTP's protocol: summary.json's tail_mean ± tail_std
	// averages the evaluations of rounds (1-based) >= rounds − TailRounds, as the official
	// code's test_round = comm_round − 200 (41 evaluations at 1,500 rounds evaluated every
	// 5); default 200 (the paper's).
	TailRounds int  `mapstructure:"tail_rounds" json:"tail_rounds"`
	Sequential bool `mapstructure:"sequential" json:"sequential"` // train sampled clients one at a time (reference path)
	// Workers is how many groups of a round's clients train at once on the CPU, each a
	// stacked model on its own thread with one intra-op thread (and evaluation chunks
	// likewise): a second intra-op thread gains little on these models, a second group
	// nearly doubles the speed. Default 0: one group per CPU the process may use (fewer
	// when OMP_NUM_THREADS or a launch's processes share them); on CUDA 1, where one
	// stacked model fills the device. Results do not depend on it for the ViTs and
	// FocalNet (tested bit for bit); the ConvNet's grouped convolutions round by stack
	// size, so its last digits do. Capped at the clients per round.
	Workers int `mapstructure:"workers" json:"workers"`
	// Stack is the most clients one stacked group holds on the CPU: the round's clients
	// are split into groups of at most Stack clients, which the workers take in turn, so
	// only Workers groups' activations are in memory at once (FedTP's default model: about
	// 0.5 GB per client). Default 0: one client per group when several workers train (the
	// workers take the clients one by one, balancing clients of unequal data; as fast or
	// faster than fixed shares in every case measured, bench/RESULTS.md), one stack of all
	// the round's clients with one worker (stacking gains 4–17% per sample on one core).
	// Results do not depend on it.
	Stack int `mapstructure:"stack" json:"stack"`
	// Precision is fp32 (float32 throughout), tf32 (float32, with CUDA matmuls in TF32;
	// the same as fp32 on the CPU) or bf16 (the models' forward and backward under bf16
	// autocast over float32 weights; optimizer, aggregation and the hypernetwork in
	// float32); default fp32.
	Precision string `mapstructure:"precision" json:"precision"`
	// Eager runs every training step eagerly on a CUDA device instead of capturing each
	// phase's step once as a CUDA graph and replaying it (default false: graphs on CUDA;
	// the CPU always runs eagerly). For comparing the two, or if a capture misbehaves.
	Eager bool `mapstructure:"eager" json:"eager"`
	// CheckpointEvery saves the run every so many rounds (and on SIGINT/SIGTERM, and before
	// stopping on a NaN loss); default 10.
	CheckpointEvery int `mapstructure:"checkpoint_every" json:"checkpoint_every"`
}

// Default is the configuration with every documented default; a program or config file
// sets the fields it wants on it. The name, novel.lr and algorithm.hyper.lr are left
// unset: they follow the algorithm, the model and train.lr (Resolved fills them in);
// algorithm.hyper.embed, .hidden and .rank are left unset: the algorithm chooses.
func Default() Config {
	run := fl.DefaultConfig() // the defaults the train section shares with fl.Config
	return Config{
		Out: "runs", Device: cuda.CPU, Seed: 1,
		Data: Data{Dataset: "fashion-mnist", Clients: 50, Partition: "dirichlet", Convention: "fedtp",
			Alpha: 0.5, ClassesPerClient: 2, MinSize: 10, TrainFrac: 0.75, Normalize: "auto", SeqLen: 80},
		Model:     Model{Preset: "convnet"},
		Algorithm: fl.DefaultSettings(),
		Train: Train{Rounds: 50, Participation: 0.1, Epochs: run.Epochs, Batch: run.Batch, LR: run.LR, EvalEvery: 5, EvalProtocol: string(run.Protocol),
			TailRounds: 200, Precision: "fp32", CheckpointEvery: 10},
		Novel: Novel{Epochs: 5, ConvergeWithin: 0.01, Tune: []string{fl.TuneEmbedding, fl.TuneHypernetwork}},
	}
}

// Resolved returns the config with the values that follow others filled in: the run name
// (algorithm and model), novel.lr and algorithm.hyper.lr (train.lr). Run resolves before it
// validates, and config.json holds the resolved config.
func (c Config) Resolved() Config {
	if c.Name == "" {
		c.Name = c.Algorithm.Name + "-" + c.Model.Preset
	}
	if c.Data.Normalize == "auto" {
		c.Data.Normalize = autoNormalize(c.Data.Dataset)
	}
	lr := c.Train.LR
	if c.Novel.LR == nil {
		c.Novel.LR = &lr
	}
	c.Algorithm = c.Algorithm.Resolve(lr)
	return c
}

// IsGrid reports whether c runs as a grid: it has seeds or a sweep.
func (c Config) IsGrid() bool { return len(c.Seeds) > 0 || len(c.Sweep) > 0 }

// normalizations are the fixed per-channel constants data.normalize may name: FedTP's
// official code normalizes CIFAR-10 and CIFAR-100 with these whatever the data.
var normalizations = map[string][2][]float64{
	"cifar10":  {{0.4914, 0.4822, 0.4465}, {0.2023, 0.1994, 0.2010}},
	"cifar100": {{0.5071, 0.4865, 0.4409}, {0.2673, 0.2564, 0.2762}},
	"half":     {{0.5}, {0.5}}, // per stored channel, repeated
}

// Normalization is data.normalize's fixed constants for images of ch stored channels (nil
// for "dataset": the caller computes the training split's statistics). Three constants
// need three channels, stored or made by data.channels: 3.
func (d Data) Normalization(ch int) (mean, std []float64, err error) {
	c, ok := normalizations[d.Normalize]
	if !ok {
		return nil, nil, nil
	}
	if len(c[0]) == 1 {
		return slices.Repeat(c[0], ch), slices.Repeat(c[1], ch), nil
	}
	if ch != len(c[0]) && d.Channels != len(c[0]) {
		return nil, nil, fmt.Errorf("data.normalize: %s has %d channels' constants, the images %d (data.channels: 3 repeats a grey channel)", d.Normalize, len(c[0]), ch)
	}
	return c[0], c[1], nil
}

// autoNormalize is what data.normalize: auto means for a dataset spec: FedTP's fixed
// constants for CIFAR-10 and CIFAR-100, as its official code, else the training split's
// own statistics. The grey chest X-ray sets (rsna, kermany, kermany-binary) take their
// own: no published constants fit radiographs, and ImageNet's are for colour photos.
func autoNormalize(dataset string) string {
	kind, _, _ := strings.Cut(dataset, ":")
	switch kind {
	case "cifar10", "cifar100":
		return kind
	}
	return "dataset"
}

// Partition maps the data section onto the partition's typed config.
func (c Config) Partition() data.PartitionConfig {
	return data.PartitionConfig{Method: data.Method(c.Data.Partition), Convention: data.Convention(c.Data.Convention),
		Clients: c.Data.Clients, Seed: c.Seed, Alpha: c.Data.Alpha, ClassesPerClient: c.Data.ClassesPerClient,
		MinSize: c.Data.MinSize, HoldOut: c.Data.HoldOut, NoiseMax: c.Data.Noise, TrainFrac: c.Data.TrainFrac,
		File: c.Data.PartitionFile}
}

// Spec is the model section as a model.Spec, without the data's geometry.
func (m Model) Spec() model.Spec {
	// model.Spec reads 0 as "the preset's" (or the algorithm's), which is what an unset key
	// means; Validate has refused a key set to 0
	return model.Spec{Preset: m.Preset, Depth: defaults.Value(m.Depth), Patch: defaults.Value(m.Patch), Dim: defaults.Value(m.Dim),
		Heads: defaults.Value(m.Heads), HeadDim: defaults.Value(m.HeadDim), MLP: defaults.Value(m.MLP), Prompts: defaults.Value(m.Prompts),
		Prefix: model.PrefixConfig{Blocks: defaults.Value(m.Prefix.Blocks), Mid: defaults.Value(m.Prefix.Mid), Scale: defaults.Value(m.Prefix.Scale),
			Kind: model.PrefixKind(m.Prefix.Kind), Form: model.PrefixForm(m.Prefix.Form), Init: model.PrefixInit(m.Prefix.Init),
			Length: defaults.Value(m.Prefix.Length)},
		Adapter: model.MLPAdapterConfig{Mid: defaults.Value(m.Adapter.Mid), Scale: defaults.Value(m.Adapter.Scale), Shared: m.Adapter.Shared}}
}

// NovelStudy is the novel-client study's fine-tuning config for one tuned part (mode: a
// novel.tune entry, or "" for an algorithm that tunes its personal parameters).
func (n Novel) NovelStudy(mode string) fl.NovelConfig {
	return fl.NovelConfig{Epochs: n.Epochs, LR: defaults.Value(n.LR), Mode: mode}
}

// FL is the fl.Config of the train section on c.Device, with train.workers as given (a
// run replaces 0 with the count it chooses) and no clients per round yet.
func (c Config) FL() fl.Config {
	t := c.Train
	fc := fl.Config{Rounds: t.Rounds, Epochs: t.Epochs, Batch: t.Batch, LR: t.LR, Momentum: t.Momentum, WeightDecay: t.WeightDecay,
		EvalEvery: t.EvalEvery, Sequential: t.Sequential, Seed: c.Seed, Device: c.Device, Graphs: !t.Eager, EvalChunk: t.EvalChunk,
		EvalBatch: t.EvalBatch, Protocol: fl.EvalProtocol(t.EvalProtocol), Workers: t.Workers, Stack: t.Stack, DropLast: t.DropLast}
	if c.Data.Augment {
		fc.Augment = data.Augment{Pad: 4, Flip: true}
	}
	if t.Precision == "bf16" {
		fc.Autocast = cuda.BFloat16
	}
	return fc
}
