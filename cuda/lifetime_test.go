package cuda_test

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"pfl/cuda"
)

// rssBytes reads the resident set size of this process from /proc.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func twoGaussians(s *cuda.Scope, seed uint64, n int64) (x, y *cuda.Tensor) {
	g, _ := cuda.NewGenerator(seed, cuda.CPU)
	defer g.Close()
	// class c has mean (2c-1)·(1.5, 1.5) and unit variance; the Bayes error is about 1.7%
	lab := s.RandInt(g, 0, 2, cuda.CPU, n)
	centre := s.MulScalar(s.AddScalar(s.MulScalar(s.To(lab, cuda.Float32), 2), -1), 1.5)
	x = s.Add(s.Randn(g, cuda.Float32, cuda.CPU, n, 2), s.Unsqueeze(centre, 1))
	return x, lab
}

func TestTrainingLeavesNoHandlesAndFlatRSS(t *testing.T) {
	m := newMLP(t, 1, 2, 32, 2, cuda.Float32)
	defer m.close()
	data := newScope(t)
	x, y := twoGaussians(data, 2, 256)
	if err := data.Err(); err != nil {
		t.Fatal(err)
	}
	before := cuda.LiveTensors()
	step := cuda.NewScope()
	defer step.Close()
	var rss100 int64
	for i := 0; i < 1000; i++ {
		step.Reset() // frees the previous step's intermediates in one call
		m.sgdStep(step, x, y, 0.1)
		if err := step.Err(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i == 99 {
			runtime.GC()
			rss100 = rssBytes(t)
		}
	}
	step.Reset()
	if after := cuda.LiveTensors(); after != before {
		t.Fatalf("live tensors %d after 1000 steps, %d before", after, before)
	}
	runtime.GC()
	growth := rssBytes(t) - rss100
	t.Logf("RSS growth from step 100 to 1000: %d KiB", growth/1024)
	// Each step allocates and frees ~60 KiB of intermediates; a leak of even one per step
	// would grow RSS by tens of MiB over 900 steps.
	if growth > 8<<20 {
		t.Fatalf("RSS grew by %d KiB over 900 steps", growth/1024)
	}
}

func TestScopeOwnership(t *testing.T) {
	base := cuda.LiveTensors()
	s := cuda.NewScope()
	a := s.Zeros(cuda.Float32, cuda.CPU, 3)
	b := s.Ones(cuda.Float32, cuda.CPU, 3)
	c := s.Add(a, b)
	if got := cuda.LiveTensors() - base; got != 3 {
		t.Fatalf("3 tensors made, %d live", got)
	}
	s.Keep(c)
	b.Close() // early close: the scope must skip it
	if s.Len() != 1 {
		t.Fatalf("scope owns %d tensors, want 1", s.Len())
	}
	s.Close()
	if !a.Closed() || c.Closed() {
		t.Fatalf("after scope close: a closed=%v (want true), kept c closed=%v (want false)", a.Closed(), c.Closed())
	}
	if got := cuda.LiveTensors() - base; got != 1 {
		t.Fatalf("%d live after close, want the kept one", got)
	}
	if s.Add(c, c) != nil || s.Err() == nil {
		t.Fatal("op on a closed scope did not fail")
	}
	s2 := cuda.NewScope()
	s2.Adopt(c)
	s2.Close()
	if !c.Closed() || cuda.LiveTensors() != base {
		t.Fatalf("adopted tensor not freed: closed=%v live=%d base=%d", c.Closed(), cuda.LiveTensors(), base)
	}
	c.Close() // idempotent
	var nilT *cuda.Tensor
	nilT.Close()

	if cuda.LiveGenerators() != 0 {
		t.Fatalf("%d generators live between tests", cuda.LiveGenerators())
	}
}
