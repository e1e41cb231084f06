package experiment

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/fl"
)

// memoryFloor is a lower bound, in bytes, of the memory a run's models and optimizer take
// before any activation: float32 parameters for the global model, the K-client training
// model and the evaluation chunk (and with client groups, the groups' models and chunks),
// plus the K clients' gradients and momentum buffers, plus
// every client's stored personal parameters, plus (FedTP, TransFed, pFedHN) the
// hypernetwork's parameters and their momentum (full heads: about hidden × the generated
// parameters of one client; low-rank heads far fewer). It builds the model with shapes only (nothing is
// allocated), wrapped as the algorithm wraps it (Ditto: two copies), and counts in
// float64, so absurd sizes cannot overflow.
func memoryFloor(cfg config.Config, build fl.Builder) (float64, error) {
	strat := cfg.Algorithm.Strategy()
	defer fl.CloseStrategy(strat)
	values, _, err := floorParts(cfg, strat, build)
	return values, err
}

// tensorBytes is what one tensor object costs on the CPU besides its values: libtorch's
// TensorImpl, storage and autograd metadata, the allocation's header and alignment, and
// the Go handle, name and bookkeeping of a parameter (measured: a 1,000-block ViT of width 8,
// 11,008 parameters of at most 1 KiB each, took 28 MB per model). A model of many small
// parameters (a deep, narrow one) is mostly this.
const tensorBytes = 2048

// floorParts is memoryFloor's bytes of values and the bytes of the tensor objects that hold
// them (tensorBytes each): per parameter of the wrapped model, the global model, the round's
// stack with its gradients and momentum buffers, the evaluation chunk, and with client
// groups each group's model, gradients and momentum and each thread's evaluation chunk;
// plus one per personal parameter (the store). One shapes-only build serves both (a
// 100,000-block model takes seconds to declare).
func floorParts(cfg config.Config, strat fl.Strategy, build fl.Builder) (values, objects float64, err error) {
	f, err := fl.Measure(strat, build, cfg.Data.Clients)
	if err != nil {
		return 0, 0, err
	}
	params, personal, tensors, personalTensors, hyperParams := f.Params, f.Personal, f.Tensors, f.PersonalTensors, f.Hyper
	clients := float64(cfg.Data.Clients)
	k := max(math.Floor(cfg.Train.Participation*clients), 1)
	chunk := float64(cfg.Train.EvalChunk)
	if chunk == 0 {
		chunk = k
	}
	if f.EveryClient {
		k = clients
	}
	floats := params*(1+3*k+chunk) + personal*clients + 2*hyperParams
	copies := 5.0 // tensor objects per parameter: global, stack, its gradients and momentum, evaluation chunk
	fc := fl.Config{Workers: workersFor(cfg.Train, cfg.Device), Stack: cfg.Train.Stack}
	if groups := fc.GroupSizes(int(k)); len(groups) > 1 {
		// client groups (train.workers, train.stack): the groups' own models beside the
		// round's stack, and with several threads an evaluation chunk for each
		floats += params * k
		copies += 3 * float64(len(groups))
		if threads := fc.GroupThreads(int(k)); threads > 1 {
			floats += params * float64(threads) * chunk
			copies += float64(threads)
		}
	}
	return 4 * floats, tensorBytes * (tensors*copies + personalTensors), nil
}

// checkMemory refuses a run whose memory floor (values and tensor objects) exceeds what the
// device has free, before anything is allocated, with the estimate in the message; it
// returns the floor.
func checkMemory(cfg config.Config, strat fl.Strategy, build fl.Builder, dev cuda.Device) (float64, error) {
	need, objects, err := floorParts(cfg, strat, build)
	if !dev.IsCUDA() { // on CUDA the objects live in host memory, not the GPU's
		need += objects
	}
	if err != nil {
		return 0, fmt.Errorf("model.preset %s cannot be built for this data (data.image_size, data.channels and the model.* size keys shape it): %w", cfg.Model.Preset, err)
	}
	have, where := availableMemory(dev)
	if have > 0 && need > float64(have) {
		return 0, fmt.Errorf("model: the models and optimizer state alone need at least %s, more than the %s free on %s; make the model (model.*: model.depth, model.dim, ...), the clients per round (train.participation) or the hypernetwork (algorithm.hyper.hidden, algorithm.hyper.rank) smaller, or train fewer clients at once (train.workers, train.stack)",
			gib(need), gib(float64(have)), where)
	}
	return need, nil
}

// memoryEstimate is the line `pfl train` prints before the first round: the floor (models,
// optimizer state, hypernetwork) and what the device has free. Activations come on top:
// they grow with train.batch × the clients per round (train.participation) and the
// model's width and tokens, and the peak after the run tells what they took.
func memoryEstimate(floor float64, dev cuda.Device) string {
	have, where := availableMemory(dev)
	free := "unknown"
	if have > 0 {
		free = human(float64(have))
	}
	return fmt.Sprintf("memory: at least %s for models, optimizer state and hypernetwork, before activations; %s free on %s",
		human(floor), free, where)
}

// memoryExpected is the line `pfl train` prints on the CPU before the first round, when
// the run can measure one client's training step (fl.Run.ProbeActivations): the resident
// memory now (models, optimizer state, hypernetwork, data, libraries) plus what the steps
// of the clients a round trains at once add, the estimate of the training peak that the
// measured peak after the run is to be compared with. It runs before the run directory is
// touched and refuses a run whose steps exceed the memory available (checkActivations).
// A probe takes what it measures, so the batch is reached by doubling from one sample, and
// before each probe the last two, extrapolated linearly to the run's batch, must fit: a
// step that could not fit is refused from probes a fraction of its size. (Two small probes
// alone mislead: at one sample a step's peak is its gradients, at more its activations.)
// Empty when it cannot say; ctx ends it between probes.
func memoryExpected(ctx context.Context, cfg config.Config, run *fl.Run) (string, error) {
	batch := max(cfg.Train.Batch, 1)
	n := run.ClientsAtOnce()
	b, act := 1, 0.0
	var lastB int
	var last float64
	for {
		got, ok := run.ProbeActivations(b)
		if !ok {
			return "", nil
		}
		if err := interrupted(ctx, "measuring the training step's memory"); err != nil {
			return "", err
		}
		if b == batch {
			act = got
			break
		}
		// one probe cannot split the gradients (fixed) from the activations (per sample):
		// the check starts at the second. What is available is read at each check: a probe
		// hands back what it took (the cache's blocks, glibc's free pages), and the room
		// under ulimit -v follows the process's size.
		if lastB > 0 {
			slope := max(got-last, 0) / float64(b-lastB)
			have, where := memAvailable()
			if err := checkActivations(cfg, n, got+float64(batch-b)*slope, have, where); err != nil {
				return "", err
			}
		}
		lastB, last, b = b, got, min(2*b, batch)
	}
	rss := procStatusKB("VmRSS:")
	if rss == 0 {
		return "", nil
	}
	have, where := memAvailable()
	if err := checkActivations(cfg, n, act, have, where); err != nil {
		return "", err
	}
	return fmt.Sprintf("memory: %s resident now; training adds about %s per client (one probe step), %d at once: about %s expected at its peak",
		human(float64(rss<<10)), human(act), n, human(float64(rss<<10)+float64(n)*act)), nil
}

// checkActivations refuses n clients' activations of act bytes each when they exceed have
// bytes available on where (0: unknown, nothing refused), naming what lowers them: the
// clients at once, the batch, and the model's depth, width and tokens.
func checkActivations(cfg config.Config, n int, act float64, have int64, where string) error {
	if need := float64(n) * act; have > 0 && need > float64(have) {
		return fmt.Errorf("memory: training %d clients at once needs about %s for their steps (%s each, from probe steps), more than the %s available on %s; train fewer at once (train.workers, train.stack), or make train.batch (%d) or the model smaller: model.depth, model.dim, or the tokens (data.image_size, model.patch)",
			n, human(need), human(act), human(float64(have)), where, cfg.Train.Batch)
	}
	return nil
}

// memoryPeak is the line `pfl train` prints after the last round: the process's peak
// resident memory on the CPU (VmHWM: host copies of the data, the Go heap and libtorch's
// tensors together), the caching allocator's peak on CUDA.
func memoryPeak(dev cuda.Device) string {
	if dev.IsCUDA() {
		_, peak, err := cuda.CUDAMemoryStats(dev.Index, false)
		if err != nil {
			return fmt.Sprintf("peak memory on %s: unknown (%v)", dev, err)
		}
		return fmt.Sprintf("peak memory on %s: %s (tensors)", dev, human(float64(peak)))
	}
	hwm := procStatusKB("VmHWM:")
	if hwm == 0 {
		return "peak memory: unknown (no /proc/self/status)"
	}
	return fmt.Sprintf("peak memory: %s (resident, VmHWM)", human(float64(hwm<<10)))
}

// procStatusKB reads a "Key: N kB" line of /proc/self/status; 0 when absent.
func procStatusKB(key string) int64 {
	return readKB("/proc/self/status", key)
}

func gib(b float64) string { return fmt.Sprintf("%.1f GiB", b/(1<<30)) }

// human is b in GiB, or in MiB below 1 GiB (a demo's models are a few MiB).
func human(b float64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.0f MiB", b/(1<<20))
	}
	return gib(b)
}

// availableMemory is the device's free memory in bytes (0 when unknown) and its name.
func availableMemory(dev cuda.Device) (int64, string) {
	if dev.IsCUDA() {
		free, _, err := cuda.CUDAMemInfo(dev.Index)
		if err != nil {
			return 0, dev.String()
		}
		return free, dev.String()
	}
	return memAvailable()
}

// memAvailable is the memory this process can still take, in bytes (0 when unknown), and
// what bounds it: the least of Linux's estimate of the memory available without swapping
// (MemAvailable), the room left under the address-space limit (ulimit -v: RLIMIT_AS less
// the process's VmSize) and the room left in its cgroup (memory.max less memory.current).
func memAvailable() (int64, string) {
	have, where := readKB("/proc/meminfo", "MemAvailable:")<<10, "this machine (MemAvailable)"
	take := func(v int64, w string) {
		if have <= 0 || v < have {
			have, where = max(v, 1), w // 1: nothing left, which is not "unknown"
		}
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil && lim.Cur != ^uint64(0) && lim.Cur < 1<<62 {
		take(int64(lim.Cur)-procStatusKB("VmSize:")<<10, "this process's address space (ulimit -v)")
	}
	if maxB, err := readInt("/sys/fs/cgroup/memory.max"); err == nil {
		if cur, err := readInt("/sys/fs/cgroup/memory.current"); err == nil {
			take(maxB-cur, "this cgroup (memory.max)")
		}
	}
	return have, where
}

// readInt reads a file holding one integer ("max" and other words are errors).
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// readKB reads the value of a "Key: N kB" line of a /proc file, in kB; 0 when absent.
func readKB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb
		}
	}
	return 0
}
