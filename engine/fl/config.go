package fl

import (
	"fmt"
	"reflect"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/internal/check"
	"pfl/engine/internal/defaults"
)

// Config is one federated run. Zero values take the documented defaults.
type Config struct {
	Rounds   int // communication rounds
	PerRound int // clients sampled per round (K); FedTP: 10% of 50, 5% of 100

	Epochs      int     // local epochs; default 1
	Batch       int     // local batch size; default 64
	LR          float64 // learning rate; default 0.01
	Momentum    float64 // SGD momentum (FedTP 0.9, FedPerfix 0)
	WeightDecay float64 // SGD weight decay (FedTP 1e-5)
	Augment     data.Augment
	// DropLast drops each epoch's last partial step of local training, as PyTorch's
	// DataLoader(drop_last=True) whose batch is one step's samples (a Step hook's Batches
	// batches: Per-FedAvg's 2B): PFLlib's clients load their training data so. Default
	// false: every sample every epoch, the last batch partial (drop_last=False, as the
	// FedTP code for its transformers, FedPerfix's, pFedHN's and pFedGP's).
	DropLast bool

	EvalEvery int // evaluate every client every EvalEvery rounds; 0: only after the last round
	EvalChunk int // clients evaluated per stacked pass; default PerRound
	EvalBatch int // test samples per client per pass; default Batch
	// Protocol is when an evaluation sees each client's model; default EvalFedTP.
	Protocol EvalProtocol

	// Sequential trains the sampled clients one at a time with a single-client model
	// instead of stacked: the reference the stacked path must equal, and the baseline for
	// speed-ups.
	Sequential bool
	// Workers is how many OS threads train a round's client groups at once on the CPU, and
	// share its evaluation chunks (workers.go); 0 or 1: one. CPU only.
	Workers int
	// Stack is the most clients a group holds on the CPU: the round's clients are split
	// into contiguous groups of at most Stack clients (fewer clients' activations in memory
	// at once), which the workers take in turn; 0: one client per group with several
	// workers, one stack with one. Results do not depend on Workers or Stack
	// (TestWorkersBitIdentical). CPU only.
	Stack int

	Seed   uint64
	Device cuda.Device
	DType  cuda.DType // the models' dtype; batches are converted to it (zero value: float32)
	// Autocast runs the models' forward and backward passes under autocast to this dtype
	// (BFloat16: bf16 matmuls and convolutions over float32 master weights, optimizer and
	// aggregation in float32); the zero value or Float32: off. The hypernetwork stays in
	// the models' dtype.
	Autocast cuda.DType
	// Graphs captures each phase's training step as a CUDA graph once and replays it for
	// every later step and round (CUDA devices only; ignored on the CPU, where the same
	// step runs eagerly). A capture that fails leaves that phase eager (Run.GraphStatus).
	Graphs bool
	// Group, when it has more than one rank, trains the run across processes: each rank
	// trains its share of every round's clients and evaluates its share of the clients,
	// and the server update is all-reduced (server.go). nil or one rank: this process alone.
	Group *cuda.ProcessGroup
}

// EvalProtocol is when a round's evaluation sees each client's model.
type EvalProtocol string

const (
	// EvalFedTP evaluates every client after the server update: the new global shared
	// part with the client's personal part (FedTP's official code).
	EvalFedTP EvalProtocol = "fedtp"
	// EvalFedPerfix evaluates every client before the server update, as FedPerfix's
	// official code tests every client every round: the round's trained clients with their
	// trained models, the others with the global shared part the round started from (the
	// previous round's) and their own personal part.
	EvalFedPerfix EvalProtocol = "fedperfix"
)

// DefaultLR is the local learning rate when none is given (Config.LR, the config's
// train.lr default).
const DefaultLR = 0.01

// DefaultConfig holds the one default of each setting a config's train section shares
// with Config (engine/experiment's DefaultConfig reads them): one local epoch, batch 64,
// DefaultLR, FedTP's evaluation protocol.
func DefaultConfig() Config {
	return Config{Epochs: 1, Batch: 64, LR: DefaultLR, Protocol: EvalFedTP}
}

// defaults fills the zero fields of a Config a program wrote: DefaultConfig's, and the
// evaluation chunk and batch, which follow PerRound and Batch.
func (c *Config) defaults() {
	d := DefaultConfig()
	defaults.Set(&c.Epochs, d.Epochs)
	defaults.Set(&c.Batch, d.Batch)
	defaults.Set(&c.LR, d.LR)
	defaults.Set(&c.EvalChunk, c.PerRound)
	defaults.Set(&c.EvalBatch, c.Batch)
	defaults.Set(&c.Protocol, d.Protocol)
}

// Validate reports a configuration that cannot run: Check after the defaults (naming the
// fields, Config.LR), and the clients per round against the trainable clients.
func (c Config) Validate(trainable int) error {
	c.defaults()
	if err := c.Check(Keys{}); err != nil {
		return err
	}
	if c.PerRound < 1 || c.PerRound > trainable {
		return fmt.Errorf("fl: %d clients per round (Config.PerRound), but %d clients can train: want 1 to %d", c.PerRound, trainable, trainable)
	}
	return nil
}

// Keys are the names a caller's config gives Config's settings (engine/experiment's
// train.lr, train.precision, …), so that Check's errors name what the user wrote; a name
// left empty is the field's own (Config.LR).
type Keys struct {
	Rounds, Epochs, Batch, LR, Momentum, WeightDecay string
	EvalEvery, EvalChunk, EvalBatch, Protocol        string
	Sequential, Workers, Stack, Autocast             string
}

// named is k with every empty name filled with its field's own.
func (k Keys) named() Keys {
	v := reflect.ValueOf(&k).Elem()
	for i := range v.NumField() {
		if v.Field(i).String() == "" {
			v.Field(i).SetString("Config." + v.Type().Field(i).Name)
		}
	}
	return k
}

// Check is the one validation of the settings Config shares with a config's train section,
// naming each setting as keys does, on the values as given: zero, where it means a default
// here (Epochs, Batch, LR, Protocol), is refused, since a config states its value
// (engine/experiment checks a config with it before anything runs). EvalChunk and
// EvalBatch 0 mean "follow PerRound and Batch" in both.
func (c Config) Check(keys Keys) error {
	n := keys.named()
	k := &check.Checker{}
	k.AtLeast(n.Rounds, int64(c.Rounds), 1)
	k.AtLeast(n.Epochs, int64(c.Epochs), 1)
	k.AtLeast(n.Batch, int64(c.Batch), 1)
	k.Real(n.LR, c.LR, 0, check.Inf, "(]")
	k.Real(n.Momentum, c.Momentum, 0, 1, "[)")
	k.Real(n.WeightDecay, c.WeightDecay, 0, check.Inf, "[]")
	k.AtLeast(n.EvalEvery, int64(c.EvalEvery), 0)
	k.AtLeast(n.EvalChunk, int64(c.EvalChunk), 0)
	k.AtLeast(n.EvalBatch, int64(c.EvalBatch), 0)
	k.AtLeast(n.Workers, int64(c.Workers), 0)
	if c.Workers > 1 && c.Sequential {
		k.Fail(n.Workers, "%d, but %s trains one client at a time; set one of them", c.Workers, n.Sequential)
	}
	if c.Device.IsCUDA() && c.Workers > 1 {
		k.Fail(n.Workers, "%d on %s: client groups on threads are for the CPU, where one stacked model leaves cores idle; leave it 0 or set 1", c.Workers, c.Device)
	}
	k.AtLeast(n.Stack, int64(c.Stack), 0)
	if c.Stack > 0 && c.Sequential {
		k.Fail(n.Stack, "%d, but %s trains one client at a time; set one of them", c.Stack, n.Sequential)
	}
	if c.Device.IsCUDA() && c.Stack > 0 {
		k.Fail(n.Stack, "%d on %s: client groups are for the CPU; on CUDA all the round's clients train as one stack (leave it 0)", c.Stack, c.Device)
	}
	k.OneOf(n.Protocol, string(c.Protocol), string(EvalFedTP), string(EvalFedPerfix))
	if c.Autocast != 0 && c.Autocast != cuda.Float32 && c.Autocast != cuda.BFloat16 && c.Autocast != cuda.Float16 {
		k.Fail(n.Autocast, "autocast to %s; want bfloat16, float16 or off", c.Autocast)
	}
	return k.Err()
}
