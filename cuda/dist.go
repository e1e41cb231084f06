package cuda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// ProcessGroup is a group of processes that train together, libtorch's c10d: a TCP store
// for the rendezvous, Gloo for CPU tensors and NCCL for CUDA tensors. Its collectives are
// coarse (one native call for a whole list of tensors), change their tensors in place,
// and block until every rank has taken part; a peer that is gone or silent for longer than
// the group's timeout makes them fail with an error, never hang. Every rank must call the
// same collectives in the same order with tensors of the same shapes and dtypes. A
// ProcessGroup is not safe for concurrent use.
type ProcessGroup struct {
	h           unsafe.Pointer
	rank, world int
	dev         Device
	timeout     string // the timeout as errors name it, e.g. "PFL_DIST_TIMEOUT=30s"
	broken      bool   // a collective failed: the group cannot be used again
}

// GroupConfig is how a process joins its group.
type GroupConfig struct {
	Addr    string        // the address of rank 0, which serves the store (e.g. "127.0.0.1")
	Port    int           // the store's TCP port on Addr
	Rank    int           // this process, 0 ≤ Rank < World
	World   int           // how many processes
	Timeout time.Duration // bounds joining as a whole, and every collective
	Device  Device        // where the group's tensors live: CPU (Gloo) or a CUDA device (NCCL)
	// Interfaces, for Gloo, names the network interfaces to use, one TCP device each
	// (GLOO_SOCKET_IFNAME); empty: Local.
	Interfaces []string
	// Local, for Gloo without Interfaces, is the address of this machine that Gloo's device
	// binds to and tells the other ranks; empty: the address the hostname resolves to,
	// c10d's default, which is loopback on many machines and then unreachable from others.
	Local string
	// TimeoutVar names where Timeout was set (e.g. "PFL_DIST_TIMEOUT"), so that an error of
	// a lost peer says which setting bounded the wait; empty: "the group's timeout".
	TimeoutVar string
}

// joinGrace is how long NewProcessGroup waits beyond the timeout for the native join to
// report before it gives up on it: the native side shares the timeout among its steps and
// fails by itself, but a step that ignores its timeout (a blocking socket call in c10d or
// Gloo) must not hang the process.
const joinGrace = 2 * time.Second

// NewProcessGroup joins the group cfg describes; it returns when all World processes have
// joined, or fails after at most cfg.Timeout (and a moment), naming the ranks that did
// not come when it knows them.
func NewProcessGroup(cfg GroupConfig) (*ProcessGroup, error) {
	const op = "process_group"
	if err := Load(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		return nil, errorf(op, CodeArgument, "timeout %v must be positive", cfg.Timeout)
	}
	for _, name := range cfg.Interfaces {
		if name == "" || strings.Contains(name, ",") {
			return nil, errorf(op, CodeArgument, "bad interface name %q", name)
		}
	}
	ms := cfg.Timeout.Milliseconds()
	if ms == 0 {
		ms = 1
	}
	timeout := "the group's timeout of " + cfg.Timeout.String()
	if cfg.TimeoutVar != "" {
		timeout = cfg.TimeoutVar + "=" + cfg.Timeout.String()
	}
	type joined struct {
		h   unsafe.Pointer
		err error
	}
	done := make(chan joined, 1)
	start := time.Now()
	go func() {
		h, err := nativePGNew(cfg.Addr, cfg.Port, cfg.Rank, cfg.World, ms, cfg.Device, strings.Join(cfg.Interfaces, ","), cfg.Local)
		done <- joined{h, err}
	}()
	watchdog := time.NewTimer(cfg.Timeout + joinGrace)
	defer watchdog.Stop()
	select {
	case j := <-done:
		var e *Error
		if errors.As(j.err, &e) && e.Code != CodeArgument {
			return nil, &Error{Op: op, Code: e.Code, Msg: fmt.Sprintf("%s (gave up after %s; joining waits at most %s)",
				e.Msg, time.Since(start).Round(10*time.Millisecond), timeout)}
		}
		if j.err != nil {
			return nil, j.err
		}
		return &ProcessGroup{h: j.h, rank: cfg.Rank, world: cfg.World, dev: cfg.Device, timeout: timeout}, nil
	case <-watchdog.C:
		// The native call goes on in its thread; a group it makes after all is freed.
		go func() {
			if j := <-done; j.h != nil {
				nativePGFree(j.h)
			}
		}()
		return nil, errorf(op, CodeTimeout, "rank %d of %d did not finish joining %s within %s (no answer from the store there or from %s; gave up after %s)",
			cfg.Rank, cfg.World, hostPort(cfg.Addr, cfg.Port), timeout, peers(cfg.Rank, cfg.World), time.Since(start).Round(10*time.Millisecond))
	}
}

// hostPort is host:port, with an IPv6 host in brackets.
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// lost turns the error of a failed collective into one naming the peers that may be lost
// and the setting that bounded the wait, and marks the group broken: a collective that
// failed half-way leaves the ranks at different points of their sequence of collectives,
// so none of them can be trusted again. A refused argument (checked before any rank
// communicates) and a failed allocation are returned as they are.
func (g *ProcessGroup) lost(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code == CodeArgument || e.Code == CodeOutOfMemory {
		return err
	}
	g.broken = true
	return &Error{Op: e.Op, Code: e.Code, Msg: fmt.Sprintf("rank %d of %d lost %s (gone, unreachable, or silent for longer than %s): %s",
		g.rank, g.world, peers(g.rank, g.world), g.timeout, strings.TrimPrefix(e.Msg, e.Op+": "))}
}

// peers names the ranks of a group of world other than rank: the one peer of a group of
// two, a list of a few, or their count: the error of a timed-out collective does not say
// which peer it waited for.
func peers(rank, world int) string {
	if world == 2 {
		return "rank " + strconv.Itoa(1-rank)
	}
	if world > 9 {
		return fmt.Sprintf("one of the other %d ranks", world-1)
	}
	var rs []string
	for r := 0; r < world; r++ {
		if r != rank {
			rs = append(rs, strconv.Itoa(r))
		}
	}
	return "one of ranks " + strings.Join(rs, ", ")
}

// Rank is this process's rank in the group.
func (g *ProcessGroup) Rank() int { return g.rank }

// World is the number of processes in the group.
func (g *ProcessGroup) World() int { return g.world }

// Device is where the group's tensors live.
func (g *ProcessGroup) Device() Device { return g.dev }

func (g *ProcessGroup) handles(op string, ts []*Tensor) ([]unsafe.Pointer, error) {
	if g == nil || g.h == nil {
		return nil, errorf(op, CodeClosed, "process group was closed")
	}
	if g.broken {
		return nil, errorf(op, CodeClosed, "an earlier collective of this process group failed")
	}
	hs := make([]unsafe.Pointer, len(ts))
	for i, t := range ts {
		if err := t.check(op); err != nil {
			return nil, err
		}
		hs[i] = t.h
	}
	return hs, nil
}

// AllReduceSum replaces every tensor of ts by its sum over the ranks, in one collective
// per dtype (the list is flattened into one buffer in the native library). Every rank
// gets the same bits: the backend reduces each element once and sends the result around.
func (g *ProcessGroup) AllReduceSum(ts ...*Tensor) error {
	hs, err := g.handles("all_reduce", ts)
	if err != nil {
		return err
	}
	return g.lost(nativePGAllReduce(g.h, hs))
}

// Broadcast copies root's values of ts into every rank's ts.
func (g *ProcessGroup) Broadcast(root int, ts ...*Tensor) error {
	hs, err := g.handles("broadcast", ts)
	if err != nil {
		return err
	}
	return g.lost(nativePGBroadcast(g.h, hs, root))
}

// AllGather fills out [World, in's shape...] with every rank's in: row r is rank r's.
func (g *ProcessGroup) AllGather(out, in *Tensor) error {
	hs, err := g.handles("all_gather", []*Tensor{out, in})
	if err != nil {
		return err
	}
	return g.lost(nativePGAllGather(g.h, hs[0], hs[1]))
}

// Barrier returns when every rank has entered it.
func (g *ProcessGroup) Barrier() error {
	if _, err := g.handles("barrier", nil); err != nil {
		return err
	}
	return g.lost(nativePGBarrier(g.h))
}

// Close leaves the group and frees it; closing twice is a no-op. A group whose collective
// failed is freed in the background: c10d's destructors join the backend's threads, which
// can still be inside the failed collective (Gloo gives up on it by its own clock), and a
// process that exits on the error need not wait for them.
func (g *ProcessGroup) Close() error {
	if g == nil || g.h == nil {
		return nil
	}
	if h := g.h; g.broken {
		go nativePGFree(h)
	} else {
		nativePGFree(h)
	}
	g.h = nil
	return nil
}
