package experiment

import (
	"os"
	"runtime"
	"strconv"

	"pfl/cuda"
	"pfl/engine/dist"
)

// workersFor resolves train.workers for a run on dev: an explicit count is kept (the run
// caps it at the clients per round); 0 on the CPU is one client group per CPU this
// process may use (runtime.NumCPU honours taskset and cgroup affinity), divided among
// the processes of a launch on this machine (LOCAL_WORLD_SIZE, else WORLD_SIZE) and by
// the intra-op threads OMP_NUM_THREADS gives each, when the environment sets it; on CUDA
// and for sequential training, 1.
func workersFor(t TrainConfig, dev cuda.Device) int {
	if t.Workers > 0 {
		return t.Workers
	}
	if dev.IsCUDA() || t.Sequential {
		return 1
	}
	n := runtime.NumCPU()
	if procs := envInt("LOCAL_WORLD_SIZE", envInt(dist.EnvWorldSize, 1)); procs > 1 {
		n /= procs
	}
	if threads := envInt("OMP_NUM_THREADS", 0); threads > 1 {
		n /= threads
	}
	return max(n, 1)
}

// useWorkers prepares libtorch's threads for workers client groups: each group runs on
// one intra-op thread, unless the environment sets OMP_NUM_THREADS or MKL_NUM_THREADS
// (an explicit setting wins). libtorch's own default (its count of physical cores) would
// give every group that many threads, oversubscribing the CPUs.
func useWorkers(workers int) error {
	if workers < 2 {
		return nil
	}
	for _, v := range []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS"} {
		if _, set := os.LookupEnv(v); set {
			return nil
		}
	}
	return cuda.SetNumThreads(1)
}

// envInt is the environment variable name as a positive integer, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
