package cuda

import (
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
}

// GroupConfig is how a process joins its group.
type GroupConfig struct {
	Addr    string        // the address of rank 0, which serves the store (e.g. "127.0.0.1")
	Port    int           // the store's TCP port on Addr
	Rank    int           // this process, 0 ≤ Rank < World
	World   int           // how many processes
	Timeout time.Duration // bounds the rendezvous and every collective
	Device  Device        // where the group's tensors live: CPU (Gloo) or a CUDA device (NCCL)
}

// NewProcessGroup joins the group cfg describes; it returns when all World processes have
// joined, or fails after cfg.Timeout.
func NewProcessGroup(cfg GroupConfig) (*ProcessGroup, error) {
	const op = "process_group"
	if err := Load(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		return nil, errorf(op, CodeArgument, "timeout %v must be positive", cfg.Timeout)
	}
	ms := cfg.Timeout.Milliseconds()
	if ms == 0 {
		ms = 1
	}
	h, err := nativePGNew(cfg.Addr, cfg.Port, cfg.Rank, cfg.World, ms, cfg.Device)
	if err != nil {
		return nil, err
	}
	return &ProcessGroup{h: h, rank: cfg.Rank, world: cfg.World, dev: cfg.Device}, nil
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
	return nativePGAllReduce(g.h, hs)
}

// Broadcast copies root's values of ts into every rank's ts.
func (g *ProcessGroup) Broadcast(root int, ts ...*Tensor) error {
	hs, err := g.handles("broadcast", ts)
	if err != nil {
		return err
	}
	return nativePGBroadcast(g.h, hs, root)
}

// AllGather fills out [World, in's shape...] with every rank's in: row r is rank r's.
func (g *ProcessGroup) AllGather(out, in *Tensor) error {
	hs, err := g.handles("all_gather", []*Tensor{out, in})
	if err != nil {
		return err
	}
	return nativePGAllGather(g.h, hs[0], hs[1])
}

// Barrier returns when every rank has entered it.
func (g *ProcessGroup) Barrier() error {
	if _, err := g.handles("barrier", nil); err != nil {
		return err
	}
	return nativePGBarrier(g.h)
}

// Close leaves the group and frees it; closing twice is a no-op.
func (g *ProcessGroup) Close() error {
	if g == nil || g.h == nil {
		return nil
	}
	nativePGFree(g.h)
	g.h = nil
	return nil
}
