package cuda_test

import (
	"math"
	"testing"

	"pfl/cuda"
)

// TestHostCacheReusesLargeBlocks: a freed 4 MiB tensor's block serves the next request of
// its size class (a hit, no new system allocation), a 256 KiB one never enters the cache,
// and a release leaves no idle bytes. The counts are exact: this test is the only user of
// the cache while it runs (the package's tests are sequential).
func TestHostCacheReusesLargeBlocks(t *testing.T) {
	if _, ok := cuda.HostCache(); !ok {
		t.Skip("the caching allocator is off (PFL_CPU_CACHE=0)")
	}
	cuda.ReleaseHostCache()
	before, _ := cuda.HostCache()
	s := cuda.NewScope()
	defer s.Close()
	big := s.Zeros(cuda.Float32, cuda.CPU, 1<<20) // 4 MiB
	small := s.Zeros(cuda.Float32, cuda.CPU, 1<<16)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	mid, _ := cuda.HostCache()
	if got := mid.Misses - before.Misses; got != 1 {
		t.Fatalf("a 4 MiB and a 256 KiB tensor made %d cache misses, want 1 (the small one bypasses the cache)", got)
	}
	if mid.LiveBytes-before.LiveBytes != 4<<20 {
		t.Fatalf("live bytes grew by %d, want %d", mid.LiveBytes-before.LiveBytes, 4<<20)
	}
	big.Close()
	small.Close()
	idle, _ := cuda.HostCache()
	if idle.IdleBytes != 4<<20 {
		t.Fatalf("after freeing the 4 MiB tensor %d bytes are idle, want %d", idle.IdleBytes, 4<<20)
	}
	again := s.Ones(cuda.Float32, cuda.CPU, 1<<20-100) // the same size class
	after, _ := cuda.HostCache()
	if after.Hits-idle.Hits != 1 || after.IdleBytes != 0 {
		t.Fatalf("a request of the freed block's class: %d hits and %d idle bytes, want 1 and 0", after.Hits-idle.Hits, after.IdleBytes)
	}
	// the reused block holds what the new tensor wrote, not the old zeros
	v, err := s.Sum(again, false).Float64s()
	if err != nil || v[0] != float64(1<<20-100) {
		t.Fatalf("sum of the ones in the reused block = %v (%v), want %d", v, err, 1<<20-100)
	}
	again.Close()
	cuda.ReleaseHostCache()
	if st, _ := cuda.HostCache(); st.IdleBytes != 0 {
		t.Fatalf("%d idle bytes after a release, want 0", st.IdleBytes)
	}
}

// TestHostCacheCountsSmallBlocksAndPeak: a thousand 4 KiB tensors, which the cache leaves
// to glibc, show in SmallBytes while they live and leave it when freed; the peak since a
// reset holds a 4 MiB tensor and the small ones that lived beside it after all are freed,
// and a reset starts it again from what is held.
func TestHostCacheCountsSmallBlocksAndPeak(t *testing.T) {
	if _, ok := cuda.HostCache(); !ok {
		t.Skip("the caching allocator is off (PFL_CPU_CACHE=0)")
	}
	cuda.ReleaseHostCache()
	cuda.ResetHostCachePeak()
	before, _ := cuda.HostCache()
	s := cuda.NewScope()
	for range 1000 {
		s.Zeros(cuda.Float32, cuda.CPU, 1024)
	}
	big := s.Zeros(cuda.Float32, cuda.CPU, 1<<20)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	mid, _ := cuda.HostCache()
	if got := mid.SmallBytes - before.SmallBytes; got < 1000*4096 || got > 1000*(4096+128) {
		t.Fatalf("a thousand 4 KiB tensors hold %d small bytes, want about 4,096,000", got)
	}
	big.Close()
	s.Close()
	after, _ := cuda.HostCache()
	if after.SmallBytes != before.SmallBytes {
		t.Fatalf("%d small bytes after freeing them all, want %d as before", after.SmallBytes, before.SmallBytes)
	}
	if grew := after.PeakBytes - before.LiveBytes - before.SmallBytes; grew < 4<<20+1000*4096 {
		t.Fatalf("the peak grew by %d bytes, want at least the 4 MiB tensor and the small ones beside it", grew)
	}
	cuda.ResetHostCachePeak()
	if st, _ := cuda.HostCache(); st.PeakBytes != st.LiveBytes+st.SmallBytes {
		t.Fatalf("after a reset the peak is %d, want what is held now, %d", st.PeakBytes, st.LiveBytes+st.SmallBytes)
	}
}

// TestChildScope: a child frees its tensors when closed, except those adopted by its
// parent; it inherits the parent's grad mode; and a gradient through an adopted result
// still reaches the leaf (autograd keeps what it saved, whatever handles are freed).
func TestChildScope(t *testing.T) {
	s := cuda.NewScope()
	defer s.Close()
	w := s.Full(3, cuda.Float32, cuda.CPU, 4)
	if err := w.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	live := cuda.LiveTensors()
	c := s.Child()
	h := c.Mul(c.Exp(w), w) // w·exp(w): the backward pass needs exp(w), freed with the child
	tmp := c.AddScalar(h, 1)
	out := s.Adopt(c.Sum(h, false))
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !tmp.Closed() || out.Closed() {
		t.Fatalf("after closing the child: its own tensor closed %v (want true), the adopted one closed %v (want false)", tmp.Closed(), out.Closed())
	}
	if got := cuda.LiveTensors() - live; got != 1 {
		t.Fatalf("%d handles left by the child, want 1 (the adopted sum)", got)
	}
	g := s.Grad([]*cuda.Tensor{out}, nil, []*cuda.Tensor{w}, cuda.GradOptions{})
	v, err := g[0].Float64s()
	if err != nil {
		t.Fatal(err)
	}
	// d/dw w·e^w = (1 + w)·e^w = 4e³ ≈ 80.34 at w = 3; float32 exp, product and sum round
	// to a few ulps of 80 (about 1e-5), well inside 1e-4
	want := 4 * math.Exp(3)
	for _, x := range v {
		if math.Abs(x-want) > 1e-4 {
			t.Fatalf("gradient %v, want (1+3)·e³ = %g each", v, want)
		}
	}
	off := cuda.NewScope()
	defer off.Close()
	off.SetGradEnabled(false)
	if off.Child().GradEnabled() {
		t.Fatal("a child of a no-grad scope has grad enabled")
	}
}
