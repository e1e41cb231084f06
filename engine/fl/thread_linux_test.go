package fl_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// threadStep is a strategy whose Step hook that trains nothing, records the OS thread of each of its steps
// and yields the processor after it, and reports each client's real samples.
type threadStep struct{ tids *[]int }

func (threadStep) Name() string                { return "thread" }
func (threadStep) Personal(*model.Param) bool  { return false }
func (t threadStep) TrainHooks() fl.TrainHooks { return fl.TrainHooks{Step: t.step, Batches: 2} }
func (t threadStep) step(s *cuda.Scope, in fl.StepInput) *cuda.Tensor {
	*t.tids = append(*t.tids, syscall.Gettid())
	for range 4 {
		runtime.Gosched()
	}
	return s.Mul(s.Sum(in.Batches[0].Mask, false, 1), in.Active)
}

// TestRoundStaysOnOneThread: a round runs on one OS thread on the CPU too, while other
// goroutines keep every processor busy. libtorch draws autograd nodes' sequence numbers,
// which order a backward pass and so its sums, from a per-thread counter: a round that
// moved between threads rounded differently from run to run (Per-FedAvg HF's float64
// weights in the 7th digit, TestPerFedAvgStackedEqualsSequential/HF).
func TestRoundStaysOnOneThread(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodDirichlet, Clients: 4, Alpha: 0.5, MinSize: 5, Seed: 3})
	var tids []int
	r, err := fl.New(fl.Config{Rounds: 2, PerRound: 3, Epochs: 4, Batch: 7, LR: 0.05, Seed: 11, Device: cuda.CPU},
		threadStep{&tids}, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				runtime.Gosched()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for round := range 2 {
		tids = tids[:0]
		if _, err := r.Round(round); err != nil {
			t.Fatal(err)
		}
		if len(tids) < 2 {
			t.Fatalf("round %d: %d steps", round, len(tids))
		}
		for i, id := range tids {
			if id != tids[0] {
				t.Fatalf("round %d: step %d ran on thread %d, step 0 on %d (of %d steps)", round, i, id, tids[0], len(tids))
			}
		}
	}
}
