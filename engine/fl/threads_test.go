package fl_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// stateStep is a strategy whose Step hook that computes each step's loss (a forward pass: the convolutions'
// and linear layers' BLAS calls) and then records what its OS thread computes with.
type stateStep struct {
	mu     *sync.Mutex
	states map[int]cuda.ThreadState // by OS thread id
}

func (stateStep) Name() string                { return "state" }
func (stateStep) Personal(*model.Param) bool  { return false }
func (t stateStep) TrainHooks() fl.TrainHooks { return fl.TrainHooks{Step: t.step, Batches: 1} }
func (t stateStep) step(s *cuda.Scope, in fl.StepInput) *cuda.Tensor {
	loss := in.Loss(s, in.Model, in.Batches[0], in.Passes[0])
	st := cuda.CurrentThreadState()
	t.mu.Lock()
	t.states[syscall.Gettid()] = st
	t.mu.Unlock()
	// the first worker waits for the second, so that both threads compute even when one
	// could have taken every client before the other started
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		t.mu.Lock()
		n := len(t.states)
		t.mu.Unlock()
		if n >= 2 {
			break
		}
	}
	return loss
}

// threadsChildEnv makes the test binary run TestWorkerThreadsComputeAlone's child part.
const threadsChildEnv = "PFL_TEST_THREADS_CHILD"

// pthreadBLASEnv names a folder holding OpenBLAS's pthreads build (libblas.so.3, as Debian's
// libopenblas0-pthread installs it); scripts/test.sh unpacks one there.
const pthreadBLASEnv = "PFL_TEST_OPENBLAS_PTHREAD"

// TestWorkerThreadsComputeAlone: in a process whose environment sets no thread count (a
// user's default), a round on two worker threads computes with one thread per worker —
// libtorch's intra-op count, the thread's OpenMP count and OpenBLAS's — whichever OpenBLAS
// build libtorch loaded. OpenBLAS's pthreads build (Debian's first choice when it is
// installed) otherwise keeps a pool of one thread per CPU that every worker's products
// share: four busy threads on two cores, and products that round differently from one
// thread's.
func TestWorkerThreadsComputeAlone(t *testing.T) {
	if os.Getenv(threadsChildEnv) == "1" {
		workerThreadsChild(t)
		return
	}
	builds := []struct{ name, libDir string }{{"the system's BLAS", ""}}
	if dir := os.Getenv(pthreadBLASEnv); dir != "" {
		builds = append(builds, struct{ name, libDir string }{"OpenBLAS pthreads", dir})
	} else if os.Getenv("PFL_REQUIRE_TEST_DATA") == "1" {
		t.Fatalf("%s is not set: scripts/test.sh unpacks OpenBLAS's pthreads build for this test", pthreadBLASEnv)
	} else {
		t.Logf("%s unset: OpenBLAS's pthreads build not tested (scripts/test.sh provides it)", pthreadBLASEnv)
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			env := []string{threadsChildEnv + "=1"}
			for _, kv := range os.Environ() {
				switch strings.SplitN(kv, "=", 2)[0] {
				case "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "LD_LIBRARY_PATH":
					continue
				}
				env = append(env, kv)
			}
			if b.libDir != "" {
				env = append(env, "LD_LIBRARY_PATH="+b.libDir)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerThreadsComputeAlone$", "-test.v")
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("child: %v\n%s", err, out.String())
			}
			var states []cuda.ThreadState
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), "thread-state "); ok {
					var st cuda.ThreadState
					if err := json.Unmarshal([]byte(line), &st); err != nil {
						t.Fatal(err)
					}
					states = append(states, st)
				}
			}
			if len(states) < 2 {
				t.Fatalf("the child's round trained on %d worker threads, want 2:\n%s", len(states), out.String())
			}
			for _, st := range states {
				if b.libDir != "" && st.BLASBuild != cuda.BLASPthread {
					t.Fatalf("LD_LIBRARY_PATH=%s loaded %v, not OpenBLAS's pthreads build", b.libDir, st.BLASBuild)
				}
				if st.Torch != 1 || st.OpenMP != 1 || (st.BLAS != -1 && st.BLAS != 1) {
					t.Errorf("a worker thread computes with %d intra-op, %d OpenMP and %d BLAS threads (%v), want 1 each",
						st.Torch, st.OpenMP, st.BLAS, st.BLASBuild)
				}
			}
		})
	}
}

// workerThreadsChild trains one round of four clients on two worker threads and prints each
// worker thread's state.
func workerThreadsChild(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 3})
	step := stateStep{&sync.Mutex{}, map[int]cuda.ThreadState{}}
	r, err := fl.New(fl.Config{Rounds: 1, PerRound: 4, Epochs: 2, Batch: 8, LR: 0.05, Seed: 1, Device: cuda.CPU, Workers: 2},
		step, st.Fed, st.Train, st.Test, fltest.Convnet(16, 1, 4, false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Round(0); err != nil {
		t.Fatal(err)
	}
	for _, s := range step.states {
		b, _ := json.Marshal(s)
		fmt.Printf("thread-state %s\n", b)
	}
}
