package fl

import (
	"math"
	"runtime"
	"time"

	"pfl/cuda"
)

// The round (Run.Round), read as its table of contents: sample, prepare, train locally,
// evaluate when due, update the server. Each step lives in its own file: train.go (local
// training and SGD), server.go (aggregation and the all-reduces across processes), eval.go.

// RoundMetrics is what one round measured.
type RoundMetrics struct {
	Round     int
	Clients   []int   // sampled
	TrainLoss float64 // mean of the clients' per-step mean losses
	Samples   int     // training samples processed
	Eval      *EvalResult
	Time      Timing
}

// Timing splits a round's wall time. Generate is the part of Train spent generating the
// round's clients' parameters on the server (FedTP's hypernetwork forward; 0 for the other
// algorithms): a server step, counted in Train as well, since the training needs it first.
type Timing struct {
	Data, Train, Aggregate, Eval time.Duration
	Generate                     time.Duration
}

// Round runs round number round (0-based): sample, train, aggregate, and evaluate when due,
// with its goroutine locked to its OS thread (see lockThread).
func (r *Run) Round(round int) (RoundMetrics, error) {
	defer lockThread()()
	met := RoundMetrics{Round: round, Clients: r.sample(round)}
	if r.stream != nil {
		done, err := r.onStream()
		if err != nil {
			return met, err
		}
		defer done()
	}
	s := cuda.NewScope()
	defer s.Close()
	t0 := time.Now()
	local, lo := r.localShare(met.Clients)       // this rank's clients: all of them in one process
	generated, err := r.generate(s, met.Clients) // all the round's clients', as in one process
	if err != nil {
		return met, err
	}
	if generated != nil {
		if err := cuda.Synchronize(r.cfg.Device); err != nil {
			return met, err
		}
		met.Time.Generate = time.Since(t0)
	}
	sum, count, err := r.trainClients(s, local, shareRows(s, generated, lo, len(local)), round, &met)
	if err != nil {
		return met, err
	}
	samples := float64(met.Samples) // exact in float64 below 2^53
	if err := r.allReduceFloats(&sum, &count, &samples); err != nil {
		return met, err
	}
	met.Samples = int(samples)
	met.TrainLoss = sum / math.Max(count, 1) // finite: trainPhase stops on a client's non-finite loss
	if err := cuda.Synchronize(r.cfg.Device); err != nil {
		return met, err
	}
	met.Time.Train = time.Since(t0) - met.Time.Data
	r.phaseDone()

	due := r.evalDue(round)
	if due && r.cfg.Protocol == EvalFedPerfix {
		if err := r.timeEval(&met, func() (EvalResult, error) { return r.evaluateBeforeAggregation(local, met.Clients) }); err != nil {
			return met, err
		}
	}

	t1 := time.Now()
	if err := r.aggregate(s, met.Clients, r.serverClients(round, met.Clients), generated); err != nil {
		return met, err
	}
	met.Time.Aggregate = time.Since(t1)
	r.phaseDone()

	if due && r.cfg.Protocol != EvalFedPerfix {
		if err := r.timeEval(&met, r.Evaluate); err != nil {
			return met, err
		}
	}
	r.History = append(r.History, met)
	return met, nil
}

// evalDue reports whether round ends with an evaluation: every Config.EvalEvery rounds
// and after the last.
func (r *Run) evalDue(round int) bool {
	last := round == r.cfg.Rounds-1
	return last || (r.cfg.EvalEvery > 0 && (round+1)%r.cfg.EvalEvery == 0)
}

// timeEval runs an evaluation into met, timed, and ends its phase.
func (r *Run) timeEval(met *RoundMetrics, eval func() (EvalResult, error)) error {
	t := time.Now()
	ev, err := eval()
	if err != nil {
		return err
	}
	met.Eval = &ev
	met.Time.Eval = time.Since(t)
	r.phaseDone()
	return nil
}

// phaseDone ends a phase of a round (training, aggregation, evaluation) on the CPU: the
// caching allocator's idle blocks, sized for this phase's shapes, and the small blocks
// glibc's heaps hold free go back to the system, so they never sit beside the next phase's
// and the process's peak is its largest phase's — when either holds keepIdle bytes or
// more. A smaller idle set costs little memory beside the next phase, and keeping it
// spares the next round faulting those pages in again (measured on the small side-by-side
// config: 8% of CPU time in the kernel when every phase released, 2–5% before). A deep,
// narrow model's activations are small blocks: a 200-block ViT of width 8 left 1.2 GB
// free in the worker threads' heaps after each training phase, resident until trimmed.
func (r *Run) phaseDone() {
	if r.cfg.Device.IsCUDA() {
		return
	}
	if st, ok := cuda.HostCache(); ok && st.IdleBytes < keepIdle && st.HeapFreeBytes < keepIdle {
		return
	}
	cuda.ReleaseHostCache()
}

// keepIdle is the idle cache phaseDone leaves in place.
const keepIdle = 256 << 20

// lockThread locks the calling goroutine to its OS thread until the returned function
// runs (calls nest). Round, Evaluate and FineTuneNovel, which build and differentiate
// autograd graphs, hold it on every device, not only for CUDA graphs: libtorch numbers
// autograd nodes from a per-thread counter (at::sequence_number) and a backward pass runs
// its ready nodes in the order of those numbers, so a goroutine that moves to another OS
// thread while building a graph numbers its nodes out of creation order, the backward pass
// then sums gradients in another order, and the same run rounds differently from one
// process to the next. Grad mode, autocast and the stream are installed per native call;
// this counter cannot be. (Per-FedAvg HF's double backward showed it: its float64 weights
// differed in the 7th digit between runs after two rounds.)
func lockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// onStream runs the rest of a round on the run's own stream, as graph capture needs (not
// the default stream): on the OS thread Round has locked its goroutine to (the current
// stream is thread-local), it waits for earlier work on the device and makes the stream
// current. done waits for the round's work and restores the default stream.
func (r *Run) onStream() (done func(), err error) {
	dev := r.cfg.Device
	if err := cuda.Synchronize(dev); err != nil {
		return nil, err
	}
	if err := cuda.SetCurrentStream(dev, r.stream); err != nil {
		return nil, err
	}
	r.onRunStream = true
	return func() {
		r.onRunStream = false
		r.stream.Synchronize()
		cuda.SetCurrentStream(dev, nil)
	}, nil
}
