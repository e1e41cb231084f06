package fl

import (
	"fmt"

	"pfl/cuda"
	"pfl/engine/data"
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

func (c *Config) defaults() {
	defaults.Set(&c.Epochs, 1)
	defaults.Set(&c.Batch, 64)
	defaults.Set(&c.LR, DefaultLR)
	defaults.Set(&c.EvalChunk, c.PerRound)
	defaults.Set(&c.EvalBatch, c.Batch)
	defaults.Set(&c.Protocol, EvalFedTP)
}

// Validate reports a configuration that cannot run, naming the field and the valid values.
func (c Config) Validate(trainable int) error {
	c.defaults()
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("fl: rounds = %d, want >= 1", c.Rounds)
	case c.PerRound < 1 || c.PerRound > trainable:
		return fmt.Errorf("fl: %d clients per round, but %d clients can train (participation × clients must be in [1, clients])", c.PerRound, trainable)
	case c.Protocol != EvalFedTP && c.Protocol != EvalFedPerfix:
		return fmt.Errorf("fl: evaluation protocol %q; choose %s or %s", c.Protocol, EvalFedTP, EvalFedPerfix)
	case c.Epochs < 1 || c.Batch < 1 || c.EvalBatch < 1 || c.EvalChunk < 1:
		return fmt.Errorf("fl: epochs %d, batch %d, eval batch %d and eval chunk %d must be >= 1", c.Epochs, c.Batch, c.EvalBatch, c.EvalChunk)
	case !(c.LR > 0):
		return fmt.Errorf("fl: learning rate %g, want > 0", c.LR)
	case c.Momentum < 0 || c.Momentum >= 1 || c.WeightDecay < 0:
		return fmt.Errorf("fl: momentum %g must be in [0, 1) and weight decay %g >= 0", c.Momentum, c.WeightDecay)
	case c.Autocast != 0 && c.Autocast != cuda.Float32 && c.Autocast != cuda.BFloat16 && c.Autocast != cuda.Float16:
		return fmt.Errorf("fl: autocast to %s; want bfloat16, float16 or off", c.Autocast)
	case c.EvalEvery < 0:
		return fmt.Errorf("fl: eval every %d rounds", c.EvalEvery)
	case c.Workers < 0:
		return fmt.Errorf("fl: workers %d, want >= 0", c.Workers)
	case c.Workers > 1 && c.Device.IsCUDA():
		return fmt.Errorf("fl: %d workers: client groups on threads are for the CPU; on %s one stacked model keeps the device busy (workers 1)", c.Workers, c.Device)
	case c.Workers > 1 && c.Sequential:
		return fmt.Errorf("fl: %d workers with sequential training: sequential trains one client at a time (workers 1)", c.Workers)
	case c.Stack < 0:
		return fmt.Errorf("fl: stack %d, want >= 0 (0: one group per worker)", c.Stack)
	case c.Stack > 0 && (c.Device.IsCUDA() || c.Sequential):
		return fmt.Errorf("fl: stack %d: client groups are for the CPU and not with sequential training", c.Stack)
	}
	return nil
}
