package harness

import (
	"fmt"
	"sync"
	"time"

	"pfl/cuda"
)

// peakKey is one measured peak: a device and an element type.
type peakKey struct {
	dev cuda.Device
	dt  cuda.DType
}

var peaks struct {
	sync.Mutex
	tflops map[peakKey]float64
}

// PeakTFLOPS is the best rate of an n×n×n matmul in dt on dev (2n³ FLOPs; n = 8192 on
// CUDA, 1024 on the CPU), the denominator of MFU. It is measured once per process and
// device, under the same libtorch settings as the run, because a datasheet peak is not
// what this libtorch on this device reaches (an H100 measured about 800 TFLOP/s in bf16).
// It is timed by hand: testing.Benchmark inside a running benchmark would deadlock.
func PeakTFLOPS(dev cuda.Device, dt cuda.DType) (float64, error) {
	peaks.Lock()
	defer peaks.Unlock()
	key := peakKey{dev, dt}
	if t, ok := peaks.tflops[key]; ok {
		return t, nil
	}
	t, err := measurePeak(dev, dt)
	if err != nil {
		return 0, fmt.Errorf("harness: %s matmul peak on %s: %w", dt, dev, err)
	}
	if peaks.tflops == nil {
		peaks.tflops = map[peakKey]float64{}
	}
	peaks.tflops[key] = t
	return t, nil
}

func measurePeak(dev cuda.Device, dt cuda.DType) (float64, error) {
	n := int64(1024)
	if dev.IsCUDA() {
		n = 8192
	}
	g, err := cuda.NewGenerator(1, dev)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	x := s.To(s.Randn(g, cuda.Float32, dev, n, n), dt)
	y := s.To(s.Randn(g, cuda.Float32, dev, n, n), dt)
	s.MatMul(x, y) // warm-up: cuBLAS handles and heuristics, OpenMP threads
	if err := s.Err(); err != nil {
		return 0, err
	}
	if err := cuda.Synchronize(dev); err != nil {
		return 0, err
	}
	step := cuda.NewScope()
	defer step.Close()
	step.SetGradEnabled(false)
	best := 0.0
	for r := 0; r < 3; r++ {
		const reps = 5
		start := time.Now()
		for i := 0; i < reps; i++ {
			step.Reset()
			step.MatMul(x, y)
			if err := step.Err(); err != nil { // Reset clears it
				return 0, err
			}
		}
		if err := cuda.Synchronize(dev); err != nil {
			return 0, err
		}
		if t := 2 * float64(n*n*n) * reps / time.Since(start).Seconds() / 1e12; t > best {
			best = t
		}
	}
	return best, nil
}
