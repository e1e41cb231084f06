// Package dist starts training across processes the way torchrun does: every process
// reads its place from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) and joins a libtorch c10d process group (cuda.ProcessGroup: Gloo on the
// CPU, NCCL on GPUs). `pfl launch` sets these variables for N local processes; on several
// machines a user (or torchrun, or a cluster's scheduler) sets them per process.
//
// With WORLD_SIZE unset or 1 nothing changes: FromEnv returns a nil Env and the run is
// one process, as always.
package dist

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"pfl/cuda"
)

// The environment variables, torchrun's names, and pfl's own timeout.
const (
	EnvRank       = "RANK"
	EnvWorldSize  = "WORLD_SIZE"
	EnvLocalRank  = "LOCAL_RANK"
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	// EnvTimeout bounds the rendezvous and every collective, as a Go duration ("90s",
	// "5m"); a rank that is gone makes the others fail after at most this long.
	EnvTimeout = "PFL_DIST_TIMEOUT"
)

// DefaultTimeout is PFL_DIST_TIMEOUT's default: long enough for the slowest rank's
// evaluation between two collectives, short enough that a lost rank is noticed.
const DefaultTimeout = 5 * time.Minute

// Env is one process's place in a group of processes.
type Env struct {
	Rank, World, LocalRank int
	Addr                   string
	Port                   int
	Timeout                time.Duration
}

// FromEnv reads the process's place from the environment; nil (and no error) when
// WORLD_SIZE is unset or 1. A variable that is missing or malformed is an error naming it.
func FromEnv() (*Env, error) { return parse(os.Getenv) }

func parse(get func(string) string) (*Env, error) {
	ws := get(EnvWorldSize)
	if ws == "" {
		return nil, nil
	}
	world, err := intVar(get, EnvWorldSize, 1, 1<<20)
	if err != nil || world == 1 {
		return nil, err
	}
	e := &Env{World: world, Timeout: DefaultTimeout}
	if e.Rank, err = intVar(get, EnvRank, 0, world-1); err != nil {
		return nil, err
	}
	if get(EnvLocalRank) != "" {
		if e.LocalRank, err = intVar(get, EnvLocalRank, 0, world-1); err != nil {
			return nil, err
		}
	}
	if e.Addr = get(EnvMasterAddr); e.Addr == "" {
		return nil, fmt.Errorf("dist: %s is not set (the address of rank 0; WORLD_SIZE=%d)", EnvMasterAddr, world)
	}
	if e.Port, err = intVar(get, EnvMasterPort, 1, 65535); err != nil {
		return nil, err
	}
	if v := get(EnvTimeout); v != "" {
		if e.Timeout, err = time.ParseDuration(v); err != nil || e.Timeout <= 0 {
			return nil, fmt.Errorf("dist: %s=%q: want a positive duration such as 90s or 5m", EnvTimeout, v)
		}
	}
	return e, nil
}

// intVar reads the integer variable name, which must lie in [lo, hi].
func intVar(get func(string) string, name string, lo, hi int) (int, error) {
	v := get(name)
	if v == "" {
		return 0, fmt.Errorf("dist: %s is not set (WORLD_SIZE > 1 needs %s, %s, %s and %s)", name, EnvRank, EnvWorldSize, EnvMasterAddr, EnvMasterPort)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("dist: %s=%q: want an integer in [%d, %d]", name, v, lo, hi)
	}
	return n, nil
}

// Device is the device of this rank's tensors for the configured device dev: on CUDA, GPU
// LOCAL_RANK (each local process its own GPU, as torchrun), else dev.
func (e *Env) Device(dev cuda.Device) cuda.Device {
	if e != nil && dev.IsCUDA() {
		return cuda.Device{Type: cuda.CUDADevice, Index: e.LocalRank}
	}
	return dev
}

// Join joins the group on dev (Gloo for the CPU, NCCL for a GPU).
func (e *Env) Join(dev cuda.Device) (*cuda.ProcessGroup, error) {
	g, err := cuda.NewProcessGroup(cuda.GroupConfig{Addr: e.Addr, Port: e.Port, Rank: e.Rank, World: e.World, Timeout: e.Timeout, Device: dev})
	if err != nil {
		return nil, fmt.Errorf("dist: rank %d of %d joining %s:%d: %w", e.Rank, e.World, e.Addr, e.Port, err)
	}
	return g, nil
}

type groupKey struct{}

// NewContext returns ctx carrying the process group g, which the runs started with the
// context train across (nil: one process).
func NewContext(ctx context.Context, g *cuda.ProcessGroup) context.Context {
	return context.WithValue(ctx, groupKey{}, g)
}

// FromContext is the process group ctx carries, or nil.
func FromContext(ctx context.Context) *cuda.ProcessGroup {
	g, _ := ctx.Value(groupKey{}).(*cuda.ProcessGroup)
	return g
}

// Writes reports whether this process writes the run's files: rank 0, or the only process.
func Writes(g *cuda.ProcessGroup) bool { return g == nil || g.Rank() == 0 }

// Any reports whether local is true on any rank of g (true where g is nil and local is):
// the ranks agree on it, as on stopping after a round when a signal reached only some of
// them or reached them at different moments. Every rank must call it at the same point.
func Any(g *cuda.ProcessGroup, local bool) (bool, error) {
	if g == nil {
		return local, nil
	}
	s := cuda.NewScope()
	defer s.Close()
	v := 0.0
	if local {
		v = 1
	}
	t := cuda.FromSlice(s, g.Device(), []float64{v})
	if err := s.Err(); err != nil {
		return false, err
	}
	if err := g.AllReduceSum(t); err != nil {
		return false, fmt.Errorf("dist: rank %d of %d: %w", g.Rank(), g.World(), err)
	}
	sum, err := t.Float64s()
	if err != nil {
		return false, err
	}
	return sum[0] > 0, nil
}
