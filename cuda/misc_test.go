package cuda_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"pfl/cuda"
)

func TestHostRoundTrips(t *testing.T) {
	s := newScope(t)
	u := cuda.FromSlice(s, cuda.CPU, []uint8{0, 7, 255}, 3)
	got, err := cuda.ToSlice[uint8](u)
	if err != nil || string(got) != string([]uint8{0, 7, 255}) || u.DType() != cuda.Uint8 {
		t.Fatalf("u8 round trip: %v %v %s", got, err, u.DType())
	}
	b := s.To(cuda.FromSlice(s, cuda.CPU, []float32{0.5, -3, 1e-3}), cuda.BFloat16)
	f, err := b.Float32s()
	// 1e-3 in bf16 (8 significant bits) is 0.00099945068359375
	if err != nil || f[0] != 0.5 || f[1] != -3 || f[2] != 0.00099945068359375 {
		t.Fatalf("bf16 to float32: %v %v", f, err)
	}
	ints, err := cuda.FromSlice(s, cuda.CPU, []int32{-4, 9}).Int64s()
	if err != nil || ints[0] != -4 || ints[1] != 9 {
		t.Fatalf("i32 to int64: %v %v", ints, err)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	if cuda.FromSlice(s, cuda.CPU, []float32{1, 2, 3}, 2, 2) != nil || !errors.Is(s.Err(), cuda.ErrShape) {
		t.Fatalf("3 values for a 2x2 tensor: %v", s.Err())
	}
}

func TestHostOutOfMemoryIsTyped(t *testing.T) {
	mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if err != nil || strings.TrimSpace(string(mode)) == "1" {
		t.Skip("the kernel may grant any allocation (overcommit_memory=1)")
	}
	s := newScope(t)
	if s.Zeros(cuda.Float32, cuda.CPU, 1<<40) != nil { // 4 TiB
		t.Fatal("a 4 TiB tensor was allocated")
	}
	if !errors.Is(s.Err(), cuda.ErrOutOfMemory) {
		t.Fatalf("error %v, want ErrOutOfMemory", s.Err())
	}
}

func TestSetNumThreads(t *testing.T) {
	before, _ := cuda.Capabilities()
	defer cuda.SetNumThreads(before.NumThreads)
	if err := cuda.SetNumThreads(2); err != nil {
		t.Fatal(err)
	}
	if info, _ := cuda.Capabilities(); info.NumThreads != 2 {
		t.Fatalf("threads %d after SetNumThreads(2)", info.NumThreads)
	}
	if err := cuda.SetNumThreads(0); !errors.Is(err, cuda.ErrArgument) {
		t.Fatalf("SetNumThreads(0): %v, want ErrArgument", err)
	}
}

func TestUnclosedKeptTensorIsReportedNotFreed(t *testing.T) {
	base := cuda.LiveTensors()
	leaks := cuda.Leaks()
	func() {
		s := cuda.NewScope()
		s.Keep(s.Zeros(cuda.Float32, cuda.CPU, 8)) // kept, then dropped without Close
		s.Close()
	}()
	// The tensor is unreachable now, so the first collection queues its cleanup, which
	// then runs on the runtime's cleanup goroutine; yielding after each collection lets
	// it run. Bounded by a count of collections, not by time: a busy machine only slows
	// each one down. 1000 is far more than needed (one or two suffice when idle).
	gcs := 0
	for ; cuda.Leaks() == leaks && gcs < 1000; gcs++ {
		runtime.GC()
		runtime.Gosched()
	}
	if cuda.Leaks() != leaks+1 {
		t.Fatalf("leaks %d -> %d after %d collections, want one more", leaks, cuda.Leaks(), gcs)
	}
	t.Logf("the leak was reported after %d collections", gcs)
	// The collector only reports: the handle is still live (finalizers never free).
	if cuda.LiveTensors() != base+1 {
		t.Fatalf("live tensors %d, want %d", cuda.LiveTensors(), base+1)
	}
}

// TestSetMatmulPrecision accepts libtorch's three precisions and names a bad one.
func TestSetMatmulPrecision(t *testing.T) {
	for _, p := range []string{"high", "medium", "highest"} {
		if err := cuda.SetMatmulPrecision(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	err := cuda.SetMatmulPrecision("tf32")
	if err == nil || !strings.Contains(err.Error(), "tf32") {
		t.Errorf("a bad precision: %v", err)
	}
}

// TestReseedEqualsNewGenerator: a generator reseeded after drawing gives the draws of a new
// generator with that seed (uniform, normal and Bernoulli dropout masks), on every device
// the build has; a run relies on it to keep its generators for the whole run.
func TestReseedEqualsNewGenerator(t *testing.T) {
	devs := []cuda.Device{cuda.CPU}
	if n, err := cuda.CUDADeviceCount(); err == nil && n > 0 {
		devs = append(devs, cuda.CUDA(0))
	}
	for _, dev := range devs {
		draw := func(g *cuda.Generator) []float64 {
			s := newScope(t)
			x := s.Cat(0, s.Rand(g, cuda.Float32, dev, 7), s.Randn(g, cuda.Float32, dev, 5),
				s.Dropout(g, s.Ones(cuda.Float32, dev, 9), 0.5, true))
			return values(t, s, x)
		}
		fresh, err := cuda.NewGenerator(42, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		used, err := cuda.NewGenerator(7, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer used.Close()
		draw(used)
		if err := used.Reseed(42); err != nil {
			t.Fatal(err)
		}
		want, got := draw(fresh), draw(used)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: draw %d after Reseed(42) = %g, a new generator gives %g", dev, i, got[i], want[i])
			}
		}
		used.Close()
		if err := used.Reseed(1); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Reseed of a closed generator: %v, want ErrClosed", err)
		}
	}
}
