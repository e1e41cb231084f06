package harness

import (
	"errors"
	"fmt"
	"strings"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/fl"
)

// CIFAR-100's shape: the synthetic images' side and the official test set's size.
const (
	cifarSide = 32
	cifarTest = 10000
)

// Workload is one benchmarked federated run: the full run's shape (what the GPU numbers
// and the projection are for) and how many of its rounds to time.
type Workload struct {
	Name    string // short and stable: the `pfl bench` argument, e.g. fedtp-c100-50
	Summary string // one line for the list
	Size    string // "small" after Small (its numbers check the harness, not the engine); else full

	Model     ModelSpec
	Algorithm fl.Settings // Name is a registered algorithm (fl.Algorithms); Generate, when set, what FedTP generates

	// The data: synthetic CIFAR-100-shaped images (3×32×32, 100 classes), served at
	// Model.Image (resized on the device when larger, as FedPerfix's 224).
	Classes        int
	TrainPerClient int // training samples per client
	TestPerClient  int // test samples per client (all clients are evaluated)

	Clients  int // N
	PerRound int // K, clients sampled per round
	Epochs   int // local epochs
	Batch    int // samples per client per step

	LR, Momentum, WeightDecay float64 // local SGD

	Rounds    int // rounds of the full run (for the projection)
	EvalEvery int // rounds between evaluations of the full run; 0: after the last only
	// CheckpointEvery is the full run's rounds between checkpoints (it also saves after the
	// last); 0: pfl train's default, train.checkpoint_every.
	CheckpointEvery int
	EvalChunk       int // clients per stacked evaluation pass; 0: PerRound

	// Precision is fp32 (the default), tf32 (CUDA matmuls in TF32) or bf16 (autocast over
	// float32 weights), as experiment's train.precision.
	Precision string
	// Eager runs the training steps eagerly on CUDA rather than replaying each phase's
	// step as a CUDA graph (experiment's train.eager).
	Eager bool

	Warmup  int // rounds run before timing (first-call costs, allocator growth)
	Measure int // rounds timed
}

// fedTP is FedTP's CIFAR-100 setting (paper §IV-A, official code): tiny ViT (depth 6,
// the official code's), 5 local epochs of SGD with lr 0.01, momentum 0.9, weight decay
// 1e-5, batch 64, 1,500 rounds, evaluated every 5 (configs/fedtp-t2-suite.yaml); about
// 1,000 training samples per client (CIFAR-100's 50,000 training images over 50 clients;
// the 100-client workload keeps the same figure) and the 10,000 test images spread over
// the clients.
func fedTP(name, summary string, clients, perRound int) Workload {
	return Workload{Name: name, Summary: summary,
		Model: ModelSpec{Preset: "tiny-vit", Image: 32}, Algorithm: fl.Settings{Name: "fedtp"},
		Classes: 100, TrainPerClient: 1000, TestPerClient: cifarTest / clients,
		Clients: clients, PerRound: perRound, Epochs: 5, Batch: 64,
		LR: 0.01, Momentum: 0.9, WeightDecay: 1e-5,
		Rounds: 1500, EvalEvery: 5, EvalChunk: 25, Warmup: 1, Measure: 3}
}

// workloads are the benchmark runs, in the order `pfl bench all` runs them.
var workloads = []Workload{
	fedTP("fedtp-c100-50", "FedTP, tiny ViT, CIFAR-100 shape, 50 clients, 10% per round, 5 epochs, 1,500 rounds", 50, 5),
	fedTP("fedtp-c100-100", "FedTP, tiny ViT, CIFAR-100 shape, 100 clients, 5% per round, 5 epochs, 1,500 rounds", 100, 5),
	// FedPerfix's CIFAR-100 setting (configs/fedperfix-t2-*.yaml): the 60,000 images
	// pooled over 64 clients (937 each), 75% of each client's share for training; 8 of 64
	// per round, 10 local epochs, batch 64, lr 0.01 without momentum, 50 rounds,
	// evaluated every round. FedPerfix itself is not implemented; vanilla-attn (attention
	// personal, the rest averaged) has the same model and the same training work.
	{Name: "fedperfix-vits", Summary: "ViT-S/16 at 224 (vanilla-attn), CIFAR-100 shape, 64 clients, 8 per round, 10 epochs, 50 rounds",
		Model: ModelSpec{Preset: "vit-s16", Image: 224}, Algorithm: fl.Settings{Name: "vanilla-attn"},
		Classes: 100, TrainPerClient: 703, TestPerClient: 234,
		Clients: 64, PerRound: 8, Epochs: 10, Batch: 64, LR: 0.01,
		Rounds: 50, EvalEvery: 1, Warmup: 1, Measure: 2},
	// TransFed-shaped (a FedTP hypernetwork generating the focal-modulation projections
	// f, h and proj of an isotropic FocalNet): its code is not public, so the backbone is
	// our 32×32 FocalNet and the run FedTP's CIFAR-100 setting at 100 clients, 10% per
	// round, with the 2,000 rounds the paper reports.
	{Name: "transfed-c100", Summary: "FedTP generating FocalNet's f/h/proj (TransFed shape), focalnet-cifar, CIFAR-100 shape, 100 clients, 10 per round, 2,000 rounds",
		Model:     ModelSpec{Preset: "focalnet-cifar", Image: 32},
		Algorithm: fl.Settings{Name: "fedtp", Generate: []string{"focal_f", "focal_h", "focal_proj"}},
		Classes:   100, TrainPerClient: 500, TestPerClient: 100,
		Clients: 100, PerRound: 10, Epochs: 5, Batch: 64,
		LR: 0.01, Momentum: 0.9, WeightDecay: 1e-5,
		Rounds: 2000, EvalEvery: 5, Warmup: 1, Measure: 3},
}

// Workloads lists the built-in workloads at full size.
func Workloads() []Workload { return append([]Workload(nil), workloads...) }

// ErrUnknownWorkload is returned by Lookup for a name that is not a workload.
var ErrUnknownWorkload = errors.New("unknown workload")

// Lookup finds a workload by name; the error lists the names.
func Lookup(name string) (Workload, error) {
	for _, w := range workloads {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("harness: %w %q; choose one of %s", ErrUnknownWorkload, name, strings.Join(Names(), ", "))
}

// Names lists the workloads' names.
func Names() []string {
	out := make([]string, len(workloads))
	for i, w := range workloads {
		out[i] = w.Name
	}
	return out
}

// Small is w shrunk so that it runs in seconds on a CPU: 4 clients, 2 per round, one
// epoch of 16 samples in batches of 8, 8 test samples each, one warm-up and one timed
// round; models keep 2 blocks per stage, 224-pixel models take 32-pixel inputs, and
// FedTP's hypernetwork trunk is 16 wide instead of 150 (its heads, hidden × the generated
// parameters, would otherwise take gigabytes). Its numbers check the harness, not the
// engine's speed. The full run's rounds and cadence are kept, so the projection says what
// the full run would take at the small run's speed.
func (w Workload) Small() Workload {
	w.Size = "small"
	w.Clients, w.PerRound, w.Epochs, w.Batch = 4, 2, 1, 8
	w.TrainPerClient, w.TestPerClient = 16, 8
	w.Warmup, w.Measure = 1, 1
	w.Model.Image = min(w.Model.Image, cifarSide)
	w.Model.Depth = 2
	hidden := int64(16)
	w.Algorithm.Hyper.Hidden = &hidden
	w.EvalChunk = 0
	return w
}

// Validate reports a workload that cannot run, naming the field.
func (w Workload) Validate() error {
	switch {
	case w.Clients < 1 || w.PerRound < 1 || w.PerRound > w.Clients:
		return fmt.Errorf("harness: %s: %d clients per round of %d, want 1 <= per round <= clients", w.Name, w.PerRound, w.Clients)
	case w.Epochs < 1 || w.Batch < 1:
		return fmt.Errorf("harness: %s: epochs %d and batch %d must be >= 1", w.Name, w.Epochs, w.Batch)
	case w.TrainPerClient < 1 || w.TestPerClient < 1:
		return fmt.Errorf("harness: %s: %d training and %d test samples per client, want >= 1", w.Name, w.TrainPerClient, w.TestPerClient)
	case w.Classes < 2:
		return fmt.Errorf("harness: %s: %d classes, want >= 2", w.Name, w.Classes)
	case w.EvalChunk < 0:
		return fmt.Errorf("harness: %s: eval chunk %d, want >= 0 (0: clients per round)", w.Name, w.EvalChunk)
	case w.Rounds < 1 || w.EvalEvery < 0:
		return fmt.Errorf("harness: %s: full run of %d rounds evaluated every %d, want rounds >= 1 and eval every >= 0", w.Name, w.Rounds, w.EvalEvery)
	case w.CheckpointEvery < 0:
		return fmt.Errorf("harness: %s: checkpoint every %d rounds, want >= 0 (0: pfl train's default, %d)", w.Name, w.CheckpointEvery, defaultCheckpointEvery)
	case w.Warmup < 0 || w.Measure < 1:
		return fmt.Errorf("harness: %s: %d warm-up and %d timed rounds, want >= 0 and >= 1", w.Name, w.Warmup, w.Measure)
	}
	cfg := w.experiment()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("harness: %s: %w", w.Name, err)
	}
	if k := int(cfg.Train.Participation * float64(cfg.Data.Clients)); k != w.PerRound {
		return fmt.Errorf("harness: %s: %d of %d clients per round is a participation the experiment reads as %d", w.Name, w.PerRound, w.Clients, k)
	}
	_, err := w.Model.Builder(int64(w.Classes), cuda.CPU)
	return err
}

// experiment is w as an experiment config, so that a benchmark runs the code `pfl train`
// runs: synthetic CIFAR-100-shaped data (3×32×32 images of Classes classes; exactly
// TrainPerClient and TestPerClient images per client through the IID split), resized on the
// device when the model takes larger images; the model through the factory; the
// algorithm from the registry with experiment's defaults; the precision and graph switches
// as train.precision and train.eager. It runs Warmup + Measure rounds of a run one round
// longer with no evaluation cadence, so no round evaluates on its own: the harness times
// the evaluation apart.
func (w Workload) experiment() config.Config {
	cfg := config.Default()
	cfg.Name, cfg.Device, cfg.Seed = w.Name, cuda.CPU, 1
	cfg.Algorithm.Name = w.Algorithm.Name // the workloads set the name and, for FedTP, what it generates
	if len(w.Algorithm.Generate) > 0 {
		cfg.Algorithm.Generate = w.Algorithm.Generate
	}
	if w.Algorithm.Hyper.Hidden != nil {
		cfg.Algorithm.Hyper.Hidden = w.Algorithm.Hyper.Hidden
	}
	d := &cfg.Data
	d.Dataset = fmt.Sprintf("synthetic:%d:%d:%d", w.Clients*w.TrainPerClient, w.Classes, w.Clients*w.TestPerClient)
	d.Clients, d.Partition, d.Normalize = w.Clients, "iid", "dataset"
	if w.Model.Image > 0 && w.Model.Image != 32 {
		d.ImageSize = int(w.Model.Image)
	}
	cfg.Model.Preset = w.Model.Preset
	if w.Model.Depth != 0 { // 0: the preset's, which the experiment spells unset
		cfg.Model.Depth = new(w.Model.Depth)
	}
	t := &cfg.Train
	t.Rounds, t.Participation = w.Warmup+w.Measure+1, float64(w.PerRound)/float64(w.Clients)
	t.Epochs, t.Batch, t.LR = w.Epochs, w.Batch, w.LR
	t.Momentum, t.WeightDecay, t.EvalEvery, t.EvalChunk = w.Momentum, w.WeightDecay, 0, w.EvalChunk
	t.Eager = w.Eager
	if w.Precision != "" {
		t.Precision = w.Precision
	}
	return cfg.Resolved()
}

// defaultCheckpointEvery is pfl train's train.checkpoint_every default.
var defaultCheckpointEvery = config.Default().Train.CheckpointEvery

// checkpointEvery is the full run's rounds between checkpoints, the default resolved.
func (w Workload) checkpointEvery() int {
	if w.CheckpointEvery > 0 {
		return w.CheckpointEvery
	}
	return defaultCheckpointEvery
}

// Cost is a workload's FLOPs by the package's convention (6·MACs per training sample,
// 2·MACs per evaluation sample).
type Cost struct {
	MACs      int64   // one sample's forward multiply-accumulates
	Round     float64 // training FLOPs of one round: K clients' local epochs
	Eval      float64 // FLOPs of one evaluation of all N clients
	Evals     int     // evaluations in the full run
	Total     float64 // the full run: Rounds rounds and Evals evaluations
	TrainStep float64 // FLOPs of one sample's training step, 6·MACs
}

// Cost counts w's FLOPs for a model of macs forward MACs per sample.
func (w Workload) Cost(macs int64) Cost {
	c := Cost{MACs: macs, TrainStep: 6 * float64(macs), Evals: Evaluations(w.Rounds, w.EvalEvery)}
	c.Round = c.TrainStep * float64(w.PerRound*w.Epochs*w.TrainPerClient)
	c.Eval = 2 * float64(macs) * float64(w.Clients*w.TestPerClient)
	c.Total = float64(w.Rounds)*c.Round + float64(c.Evals)*c.Eval
	return c
}

// Evaluations is how many evaluations a run of rounds rounds makes when it evaluates
// every evalEvery rounds and after the last (fl.Run.Round's rule; evalEvery 0: the last
// only).
func Evaluations(rounds, evalEvery int) int {
	if evalEvery <= 0 {
		return 1
	}
	n := rounds / evalEvery
	if rounds%evalEvery != 0 {
		n++
	}
	return n
}
