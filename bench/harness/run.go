package harness

import (
	"context"
	"fmt"
	"os"
	"time"

	"pfl/cuda"
	"pfl/engine/experiment"
	"pfl/engine/fl"
)

// Run runs w on dev: Warmup untimed rounds, Measure timed rounds each followed by a timed
// checkpoint (into a temporary folder, removed after), one untimed and one timed
// evaluation of every client, and reports. It drives libtorch from one pinned OS
// thread, as engine/fl requires.
func Run(w Workload, dev cuda.Device) (*Report, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := CheckDevice(dev); err != nil {
		return nil, err
	}
	var rep *Report
	err := cuda.Pinned(func() error {
		var err error
		rep, err = run(w, dev)
		return err
	})
	return rep, err
}

// CheckDevice loads the native library and reports, naming the fix, a CUDA device it
// cannot use: a CPU build fails only at the first op otherwise, after minutes of setup.
func CheckDevice(dev cuda.Device) error {
	info, err := cuda.Capabilities()
	if err != nil || !dev.IsCUDA() {
		return err
	}
	if !info.HasCUDA {
		return fmt.Errorf("harness: %s: %w (%s); build the CUDA one with 'bash bench/gpu.sh run' and set PFL_NATIVE_LIB to it", dev, cuda.ErrNoCUDA, info.LibraryPath)
	}
	n, err := cuda.CUDADeviceCount()
	if err != nil {
		return err
	}
	if dev.Index >= n {
		return fmt.Errorf("harness: %s: %d CUDA device(s) visible", dev, n)
	}
	return nil
}

func run(w Workload, dev cuda.Device) (*Report, error) {
	macs, params, err := w.Model.Count(int64(w.Classes))
	if err != nil {
		return nil, err
	}
	rep := newReport(w, dev, macs, params)
	if err := rep.measurePeaks(w, dev); err != nil {
		return nil, err
	}

	// The workload is an ordinary experiment config on the synthetic dataset, prepared by
	// the code `pfl train` runs: the same data upload, model factory, precision mapping and
	// algorithm registry.
	cfg := w.experiment()
	cfg.Device = dev
	sess, err := experiment.Open(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("harness: %s: %w", w.Name, err)
	}
	defer sess.Close()
	defer cuda.SetMatmulPrecision("highest") // the session set the workload's
	r := sess.Run()
	rep.Algorithm = r.Strategy().Name()

	round := func(i int) (fl.RoundMetrics, time.Duration, error) {
		t := time.Now()
		m, err := r.Round(i)
		if err == nil {
			err = cuda.Synchronize(dev) // the aggregation is asynchronous on a GPU
		}
		return m, time.Since(t), err
	}
	for i := 0; i < w.Warmup; i++ {
		if _, _, err := round(i); err != nil {
			return nil, fmt.Errorf("harness: %s: warm-up round %d: %w", w.Name, i+1, err)
		}
	}
	handles := cuda.LiveTensors()
	var allocated int64
	if dev.IsCUDA() {
		if allocated, _, err = cuda.CUDAMemoryStats(dev.Index, false); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "pfl-bench-checkpoint-")
	if err != nil {
		return nil, fmt.Errorf("harness: %s: a folder for the timed checkpoints: %w", w.Name, err)
	}
	defer os.RemoveAll(dir)
	var rounds []fl.RoundMetrics
	var walls, saves []time.Duration
	for i := w.Warmup; i < w.Warmup+w.Measure; i++ {
		m, wall, err := round(i)
		if err != nil {
			return nil, fmt.Errorf("harness: %s: round %d (timed round %d): %w", w.Name, i+1, i-w.Warmup+1, err)
		}
		// the save pfl train makes every CheckpointEvery rounds, timed after every timed round
		t := time.Now()
		if err := sess.Checkpoint(dir, wall.Seconds()); err != nil {
			return nil, fmt.Errorf("harness: %s: checkpoint after round %d: %w", w.Name, i+1, err)
		}
		rounds, walls, saves = append(rounds, m), append(walls, wall), append(saves, time.Since(t))
	}
	rep.HandleGrowth = cuda.LiveTensors() - handles
	if dev.IsCUDA() {
		a, _, err := cuda.CUDAMemoryStats(dev.Index, false)
		if err != nil {
			return nil, err
		}
		rep.MemoryGrowth = a - allocated
	}
	var graphErr error
	if rep.Graphs, graphErr = r.GraphStatus(); graphErr != nil {
		rep.GraphError = graphErr.Error()
	}

	evalTime, evalSamples, err := timeEvaluation(r, dev)
	if err != nil {
		return nil, fmt.Errorf("harness: %s: evaluation: %w", w.Name, err)
	}
	if dev.IsCUDA() {
		if _, rep.PeakMemory, err = cuda.CUDAMemoryStats(dev.Index, false); err != nil {
			return nil, err
		}
	}
	rep.measured(rounds, walls, saves, evalTime, evalSamples)
	return rep, nil
}

// measurePeaks measures the device's matmul peaks into rep (float32; bf16 where a run's MFU
// needs it) and then resets the CUDA memory peak: the peaks' 8192² operands must not count
// towards the run's memory peak, so they come first.
func (rep *Report) measurePeaks(w Workload, dev cuda.Device) error {
	var err error
	if rep.PeakFP32, err = PeakTFLOPS(dev, cuda.Float32); err != nil {
		return err
	}
	if dev.IsCUDA() || w.Precision == "bf16" { // a bf16 run's MFU needs the bf16 peak
		if info, err := cuda.Capabilities(); err == nil && info.HasBF16 {
			if rep.PeakBF16, err = PeakTFLOPS(dev, cuda.BFloat16); err != nil {
				return err
			}
		}
	}
	if dev.IsCUDA() {
		if _, _, err := cuda.CUDAMemoryStats(dev.Index, true); err != nil {
			return err
		}
	}
	return nil
}

// timeEvaluation times the second of two evaluations of r (the first warms the
// evaluation's shapes up) and returns it with the samples it evaluated.
func timeEvaluation(r *fl.Run, dev cuda.Device) (time.Duration, int, error) {
	var elapsed time.Duration
	var samples int
	for range 2 {
		t := time.Now()
		ev, err := r.Evaluate()
		if err == nil {
			err = cuda.Synchronize(dev)
		}
		if err != nil {
			return 0, 0, err
		}
		elapsed, samples = time.Since(t), sum(ev.Count)
	}
	return elapsed, samples, nil
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
