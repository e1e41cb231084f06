package cuda_test

import (
	"math"
	"runtime"
	"testing"

	"pfl/cuda"
)

// TestIntraOpThreadsFollowEveryCall checks that the configured intra-op thread count holds
// on every OS thread that calls in: OpenMP keeps the count per thread, and a goroutine that
// migrates would otherwise reduce with a different number of threads — and a different
// summation order — from one call to the next.
func TestIntraOpThreadsFollowEveryCall(t *testing.T) {
	before, _ := cuda.Capabilities()
	defer cuda.SetNumThreads(before.NumThreads)
	g, _ := cuda.NewGenerator(3, cuda.CPU)
	defer g.Close()
	s := newScope(t)
	x := s.Randn(g, cuda.Float32, cuda.CPU, 1<<22)
	s.Keep(x)
	defer x.Close()
	sum := func() float64 {
		sc := cuda.NewScope()
		defer sc.Close()
		v, err := sc.Sum(x, false).Item()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, n := range []int{1, 2} {
		if err := cuda.SetNumThreads(n); err != nil {
			t.Fatal(err)
		}
		// a fresh OS thread reports the configured count (OpenMP's own default there is
		// OMP_NUM_THREADS or the number of CPUs, which need not be the configured count:
		// with n = 1 and n = 2 one of the two differs from it on any machine)
		reported := make(chan int)
		go func() {
			runtime.LockOSThread()
			info, _ := cuda.Capabilities()
			reported <- info.NumThreads
		}()
		if got := <-reported; got != n {
			t.Fatalf("a fresh OS thread runs with %d intra-op threads, configured %d", got, n)
		}
		want := sum()
		for i := 0; i < 4; i++ { // fresh OS threads, never configured by libtorch
			got := make(chan float64)
			go func() {
				runtime.LockOSThread() // and never unlocked: the thread dies with the goroutine
				got <- sum()
			}()
			if v := <-got; v != want || math.IsNaN(v) {
				t.Fatalf("%d threads: sum on a fresh OS thread %.10g, on the configuring thread %.10g", n, v, want)
			}
		}
	}
}
