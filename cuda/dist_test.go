package cuda_test

import (
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"pfl/cuda"
)

// freePort asks the kernel for a free TCP port on loopback.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// groups starts world Gloo ranks in this process (one goroutine each) and returns them by
// rank; they are closed at the end of the test.
func groups(t *testing.T, world int, timeout time.Duration) []*cuda.ProcessGroup {
	t.Helper()
	port := freePort(t)
	pgs := make([]*cuda.ProcessGroup, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := 0; r < world; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pgs[r], errs[r] = cuda.NewProcessGroup(cuda.GroupConfig{Addr: "127.0.0.1", Port: port, Rank: r, World: world, Timeout: timeout, Device: cuda.CPU})
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, g := range pgs {
			g.Close()
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return pgs
}

// onRanks runs f for every rank at once and fails the test with the first error.
func onRanks(t *testing.T, pgs []*cuda.ProcessGroup, f func(g *cuda.ProcessGroup) error) {
	t.Helper()
	errs := make([]error, len(pgs))
	var wg sync.WaitGroup
	for r, g := range pgs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(g) }()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// TestProcessGroupCollectives checks the four collectives of three Gloo ranks on values
// whose sums are exact in float32 and float64 (small integers), so any order of summation
// gives the same bits, and a list of mixed dtypes and a non-contiguous tensor in one call.
func TestProcessGroupCollectives(t *testing.T) {
	const world = 3
	pgs := groups(t, world, 20*time.Second)
	onRanks(t, pgs, func(g *cuda.ProcessGroup) error {
		s := cuda.NewScope()
		defer s.Close()
		r := float64(g.Rank())
		a := cuda.FromSlice(s, cuda.CPU, []float32{float32(r), 1, float32(10 * r), -2}, 2, 2)
		at := s.Transpose(a, 0, 1) // a view with strides (1, 2): reduced in place through the view
		b := cuda.FromSlice(s, cuda.CPU, []float64{r + 0.5})
		n := cuda.FromSlice(s, cuda.CPU, []int64{int64(r) * 7})
		if err := s.Err(); err != nil {
			return err
		}
		if err := g.AllReduceSum(at, b, n); err != nil {
			return err
		}
		// Σ_r r = 3, Σ_r 10r = 30, Σ 1 = 3, Σ -2 = -6; b: 3 + 1.5; n: 21
		if v, _ := a.Float32s(); v[0] != 3 || v[1] != 3 || v[2] != 30 || v[3] != -6 {
			t.Errorf("rank %v: all-reduce of a: %v", r, v)
		}
		if v, _ := b.Float64s(); v[0] != 4.5 {
			t.Errorf("rank %v: all-reduce of b: %v", r, v)
		}
		if v, _ := n.Int64s(); v[0] != 21 {
			t.Errorf("rank %v: all-reduce of n: %v", r, v)
		}
		c := cuda.FromSlice(s, cuda.CPU, []float32{float32(r) + 100, float32(r) - 100})
		if err := g.Broadcast(1, c); err != nil {
			return err
		}
		if v, _ := c.Float32s(); v[0] != 101 || v[1] != -99 {
			t.Errorf("rank %v: broadcast from 1: %v", r, v)
		}
		in := cuda.FromSlice(s, cuda.CPU, []float32{float32(r), -float32(r)})
		out := s.Zeros(cuda.Float32, cuda.CPU, world, 2)
		if err := s.Err(); err != nil {
			return err
		}
		if err := g.AllGather(out, in); err != nil {
			return err
		}
		if v, _ := out.Float32s(); v[0] != 0 || v[1] != 0 || v[2] != 1 || v[3] != -1 || v[4] != 2 || v[5] != -2 {
			t.Errorf("rank %v: all-gather: %v", r, v)
		}
		bad := s.Zeros(cuda.Float32, cuda.CPU, world+1, 2)
		if err := g.AllGather(bad, in); err == nil || !strings.Contains(err.Error(), "all_gather") {
			t.Errorf("rank %v: all-gather into [%d, 2]: %v", r, world+1, err)
		}
		return g.Barrier()
	})
}

// TestProcessGroupPeerGone checks that a collective whose peer never comes fails within
// about the group's timeout with an error naming the op, instead of hanging, and that a
// closed group is an error.
func TestProcessGroupPeerGone(t *testing.T) {
	pgs := groups(t, 2, 2*time.Second)
	s := newScope(t)
	x := cuda.FromSlice(s, cuda.CPU, []float32{1})
	t0 := time.Now()
	err := pgs[0].AllReduceSum(x) // rank 1 never joins this collective
	if err == nil || !strings.Contains(err.Error(), "all_reduce") || !strings.Contains(err.Error(), "rank 0 of 2 lost rank 1") ||
		!strings.Contains(err.Error(), "the group's timeout of 2s") {
		t.Fatalf("all-reduce without the peer: %v", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("all-reduce without the peer failed after %v, timeout 2s", d)
	}
	// the ranks are no longer at the same point of their collectives: the group is done
	if err := pgs[0].Barrier(); err == nil || !strings.Contains(err.Error(), "earlier collective") {
		t.Fatalf("barrier after a failed collective: %v", err)
	}
	pgs[1].Close()
	if err := pgs[1].Barrier(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("barrier on a closed group: %v", err)
	}
}

// TestProcessGroupJoinBounded checks that joining a group whose other rank never comes
// fails within about the timeout (its steps share it instead of taking it each), naming
// the missing rank.
func TestProcessGroupJoinBounded(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	t0 := time.Now()
	g, err := cuda.NewProcessGroup(cuda.GroupConfig{Addr: "127.0.0.1", Port: freePort(t), Rank: 0, World: 2, Timeout: timeout,
		Device: cuda.CPU, Local: "127.0.0.1", TimeoutVar: "TEST_TIMEOUT"})
	if err == nil {
		g.Close()
		t.Fatal("joined a group of 2 alone")
	}
	d := time.Since(t0)
	if !strings.Contains(err.Error(), "rank 1 did not join") || !strings.Contains(err.Error(), "TEST_TIMEOUT=1.5s") {
		t.Errorf("joining alone: %v", err)
	}
	if d < timeout || d > timeout+3*time.Second {
		t.Errorf("joining alone failed after %v, timeout %v", d, timeout)
	}
}

// TestProcessGroupBadConfig checks that a bad rank or port is refused before any network.
func TestProcessGroupBadConfig(t *testing.T) {
	for _, c := range []cuda.GroupConfig{
		{Addr: "127.0.0.1", Port: 1234, Rank: 2, World: 2, Timeout: time.Second},
		{Addr: "127.0.0.1", Port: 0, Rank: 0, World: 2, Timeout: time.Second},
		{Addr: "", Port: 1234, Rank: 0, World: 2, Timeout: time.Second},
		{Addr: "127.0.0.1", Port: 1234, Rank: 0, World: 2},
		{Addr: "127.0.0.1", Port: 1234, Rank: 0, World: 2, Timeout: time.Second, Interfaces: []string{"lo,eth0"}},
	} {
		if g, err := cuda.NewProcessGroup(c); err == nil {
			g.Close()
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestABIHasProcessGroups checks that the loaded library is of ABI 1.8 or later, the first
// with pg_new_on, which NewProcessGroup calls (the loader refuses a shorter vtable).
func TestABIHasProcessGroups(t *testing.T) {
	info, err := cuda.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	if info.ABIMajor != 1 || info.ABIMinor < 8 {
		t.Fatalf("library ABI %d.%d, want 1.8 or later", info.ABIMajor, info.ABIMinor)
	}
}

// TestProcessGroupSameBitsEverywhere checks what the replicated run state relies on: an
// all-reduce whose sums round (float32 thirds and tenths) hands every rank the same bits.
func TestProcessGroupSameBitsEverywhere(t *testing.T) {
	const world, n = 3, 4099 // not a multiple of the world size: uneven chunks
	pgs := groups(t, world, 20*time.Second)
	got := make([][]float32, world)
	onRanks(t, pgs, func(g *cuda.ProcessGroup) error {
		s := cuda.NewScope()
		defer s.Close()
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i%97)/3 + float32(g.Rank()+1)/10
		}
		x := cuda.FromSlice(s, cuda.CPU, v)
		if err := g.AllReduceSum(x); err != nil {
			return err
		}
		var err error
		got[g.Rank()], err = x.Float32s()
		return err
	})
	for r := 1; r < world; r++ {
		for i := range got[0] {
			if math.Float32bits(got[r][i]) != math.Float32bits(got[0][i]) {
				t.Fatalf("element %d: rank %d has %v, rank 0 %v", i, r, got[r][i], got[0][i])
			}
		}
	}
}
