package cuda_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"pfl/cuda"
)

// train runs 50 SGD steps from seed and returns the final parameters.
func train(t *testing.T) [][]float64 {
	m := newMLP(t, 9, 2, 16, 2, cuda.Float64)
	defer m.close()
	s := cuda.NewScope()
	defer s.Close()
	x, y := twoGaussians(s, 4, 64)
	x = s.To(x, cuda.Float64)
	step := cuda.NewScope()
	defer step.Close()
	for i := 0; i < 50; i++ {
		step.Reset()
		m.sgdStep(step, x, y, 0.2)
		if err := step.Err(); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	var out [][]float64
	for _, p := range m.params {
		v, err := p.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestPinnedTrainingUnaffectedByOtherGoroutines(t *testing.T) {
	var alone [][]float64
	if err := cuda.Pinned(func() error { alone = train(t); return nil }); err != nil {
		t.Fatal(err)
	}

	// Other goroutines churn the scheduler, the Go heap and libtorch itself: one runs
	// no-grad ops on its own scope, which must not leak into the pinned thread's grad mode.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := cuda.NewScope()
			defer s.Close()
			s.SetGradEnabled(i%2 == 0)
			junk := 0
			for !stop.Load() {
				s.Reset()
				a := s.Ones(cuda.Float32, cuda.CPU, 64, 64)
				s.MatMul(a, a)
				buf := make([]byte, 1<<16)
				junk += len(buf)
				if junk%(1<<22) == 0 {
					runtime.GC()
				}
			}
		}(i)
	}
	var busy [][]float64
	err := cuda.Pinned(func() error { busy = train(t); return nil })
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i := range alone {
		closeEnough(t, "param", busy[i], alone[i], 0, 0)
	}
}
