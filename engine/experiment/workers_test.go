package experiment

import (
	"runtime"
	"testing"

	"pfl/cuda"
	"pfl/engine/config"
)

// TestWorkersFor: an explicit train.workers is kept; the default is one group per CPU on
// the CPU, shared among a launch's local processes and divided by OMP_NUM_THREADS when
// set; 1 on CUDA and for sequential training.
func TestWorkersFor(t *testing.T) {
	cpus := runtime.NumCPU()
	gpu := cuda.Device{Type: cuda.CUDADevice}
	for _, c := range []struct {
		name string
		t    config.Train
		dev  cuda.Device
		env  map[string]string
		want int
	}{
		{"explicit", config.Train{Workers: 3}, cuda.CPU, nil, 3},
		{"explicit wins over the environment", config.Train{Workers: 3}, cuda.CPU, map[string]string{"OMP_NUM_THREADS": "4"}, 3},
		{"default: one per CPU", config.Train{}, cuda.CPU, nil, cpus},
		{"one intra-op thread each", config.Train{}, cuda.CPU, map[string]string{"OMP_NUM_THREADS": "1"}, cpus},
		{"threads take CPUs", config.Train{}, cuda.CPU, map[string]string{"OMP_NUM_THREADS": "2"}, max(cpus/2, 1)},
		{"launch's processes share them", config.Train{}, cuda.CPU, map[string]string{"WORLD_SIZE": "2"}, max(cpus/2, 1)},
		{"local processes count, not all", config.Train{}, cuda.CPU, map[string]string{"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "1"}, cpus},
		{"more processes than CPUs", config.Train{}, cuda.CPU, map[string]string{"WORLD_SIZE": "64"}, 1},
		{"cuda", config.Train{}, gpu, nil, 1},
		{"sequential", config.Train{Sequential: true}, cuda.CPU, nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []string{"OMP_NUM_THREADS", "WORLD_SIZE", "LOCAL_WORLD_SIZE"} {
				t.Setenv(v, c.env[v])
			}
			if got := workersFor(c.t, c.dev); got != c.want {
				t.Errorf("workers %d, want %d (%d CPUs)", got, c.want, cpus)
			}
		})
	}
}
