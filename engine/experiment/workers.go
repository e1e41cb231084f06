package experiment

import (
	"os"
	"runtime"
	"strconv"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/dist"
)

// workersFor resolves train.workers for a run on dev: an explicit count is kept (the run
// caps it at the clients per round); 0 on the CPU is one client group per CPU this
// process may use (runtime.NumCPU honours taskset and cgroup affinity), divided among
// the processes of a launch on this machine (LOCAL_WORLD_SIZE, else WORLD_SIZE) and by
// the intra-op threads OMP_NUM_THREADS gives each, when the environment sets it; on CUDA
// and for sequential training, 1.
func workersFor(t config.Train, dev cuda.Device) int {
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
	if threads := threadsPerWorker(); threads > 1 {
		n /= threads
	}
	return max(n, 1)
}

// threadsPerWorker is the intra-op thread count a run computes with: OMP_NUM_THREADS (else
// MKL_NUM_THREADS) when the environment sets it, as libtorch and OpenMP read them; else 1.
// Each client group then runs on one thread, and the workers use the CPUs.
func threadsPerWorker() int {
	return envInt("OMP_NUM_THREADS", envInt("MKL_NUM_THREADS", 1))
}

// useThreads installs threadsPerWorker for the run, whatever the process computed with
// before (a test binary runs many runs in one process): a reduction's rounding depends on
// its thread count, so a run must not inherit one.
func useThreads() error {
	return cuda.SetNumThreads(threadsPerWorker())
}

// envInt is the environment variable name as a positive integer, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
