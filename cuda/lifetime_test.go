package cuda_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"pfl/cuda"
)

// rssBytes reads the resident set size of this process from /proc.
func rssBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()), err
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

// TestTrainingLeavesNoHandlesAndFlatRSS runs 1000 SGD steps, each in a reset scope. The
// primary check counts: the native library's live tensors and generators are the same
// after every step as before the first, so no step leaves a handle behind. The resident
// set size is a second check, for memory no handle accounts for (storage libtorch keeps,
// an autograd graph that outlives its step); see rssSlack.
func TestTrainingLeavesNoHandlesAndFlatRSS(t *testing.T) {
	const steps, batch, hidden = 1000, 256, 32
	m := newMLP(t, 1, 2, hidden, 2, cuda.Float32)
	defer m.close()
	data := newScope(t)
	x, y := twoGaussians(data, 2, batch)
	if err := data.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := rssBytes(); err != nil {
		t.Skipf("no resident set size: %v", err)
	}
	tensors, gens := cuda.LiveTensors(), cuda.LiveGenerators()
	rss := map[int]int64{}
	// One OS thread makes every allocation (libc's allocator keeps an arena per thread,
	// so steps hopping between threads would spread the working set over several arenas).
	err := cuda.Pinned(func() (err error) {
		step := cuda.NewScope()
		defer step.Close()
		for i := 0; i < steps; i++ {
			step.Reset() // frees the previous step's intermediates in one call
			if got := cuda.LiveTensors(); got != tensors {
				return fmt.Errorf("before step %d: %d live tensors, %d before the first", i, got, tensors)
			}
			if i == steps/10 || i == steps/2 {
				if rss[i], err = settledRSS(); err != nil {
					return err
				}
			}
			m.sgdStep(step, x, y, 0.1)
			if err := step.Err(); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		step.Reset()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, g := cuda.LiveTensors(), cuda.LiveGenerators(); got != tensors || g != gens {
		t.Fatalf("live tensors %d and generators %d after %d steps, %d and %d before", got, g, steps, tensors, gens)
	}
	end, err := settledRSS()
	if err != nil {
		t.Fatal(err)
	}
	first, second := rss[steps/2]-rss[steps/10], end-rss[steps/2]
	slack := rssSlack(steps/2, batch*hidden*4)
	t.Logf("RSS growth: %d KiB over steps %d-%d, %d KiB over steps %d-%d (fails above %d KiB)",
		first/1024, steps/10, steps/2, second/1024, steps/2, steps, slack/1024)
	if second > slack {
		t.Fatalf("RSS grew by %d KiB over the last %d steps (%d KiB over the %d before): memory leaks with every step",
			second/1024, steps/2, first/1024, steps/2-steps/10)
	}
}

// rssSlack bounds the growth of the resident set over n steps of a loop that leaks nothing.
// Such a loop allocates the same sizes in the same order every step, so once the allocator
// has served one step (the first tenth of the run is warm-up and is not measured) freed
// blocks are reused and the working set stops growing: what remains is page-granular
// noise, a few pages of libc's and Go's bookkeeping. A leak shows up as growth proportional
// to n; the smallest leak this test is after is one activation per step (act bytes: a
// batch × hidden float32 tensor, 32 KiB here; smaller objects are the handle counts' job),
// which grows the set by n·act = 16 MiB over 500 steps. The slack is half of that, so the
// smallest leak fails it by a factor 2 while a loop that leaks nothing has megabytes to spare.
func rssSlack(n, act int) int64 { return int64(n) * int64(act) / 2 }

// settledRSS is the resident set size after a collection that returns Go's free memory to
// the system, so that garbage the Go heap has not yet collected does not count.
func settledRSS() (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	return rssBytes()
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
