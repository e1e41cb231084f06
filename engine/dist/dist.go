// Package dist starts training across processes the way torchrun does: every process
// reads its place from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) and joins a libtorch c10d process group (cuda.ProcessGroup: Gloo on the
// CPU, NCCL on GPUs). `pfl launch` sets these variables for N local processes; on several
// machines a user (or torchrun, or a cluster's scheduler) sets them per process.
//
// Gloo's device must sit on an address the other ranks reach. c10d's default, the address
// the hostname resolves to, is 127.0.0.1 under many /etc/hosts files, and a rank on
// another machine that is told it fails to connect; so a rank uses the interfaces
// GLOO_SOCKET_IFNAME names, as PyTorch does, and without it the address of this machine
// that routes to MASTER_ADDR, as several launchers do (loopback when MASTER_ADDR is).
//
// With WORLD_SIZE unset or 1 nothing changes: FromEnv returns a nil Env and the run is
// one process, as always.
package dist

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
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
	// EnvTimeout bounds joining (connecting to rank 0's store, waiting for every rank,
	// Gloo's connections: all of it together) and every collective, as a Go duration
	// ("90s", "5m"); a rank that is gone makes the others fail after at most this long.
	EnvTimeout = "PFL_DIST_TIMEOUT"
	// EnvGlooIfname names the network interfaces of Gloo's device, comma-separated, as in
	// PyTorch (e.g. "eth1"); unset, the interface that routes to MASTER_ADDR.
	EnvGlooIfname = "GLOO_SOCKET_IFNAME"
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
	Interfaces             []string // GLOO_SOCKET_IFNAME's names; nil when unset
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
	if v := get(EnvGlooIfname); v != "" {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				return nil, fmt.Errorf("dist: %s=%q: an empty interface name", EnvGlooIfname, v)
			}
			e.Interfaces = append(e.Interfaces, name)
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

// GlooNetwork is where a rank's Gloo device sits: the interfaces GLOO_SOCKET_IFNAME names,
// one device each, or else the address Local.
type GlooNetwork struct {
	Interfaces []string
	Local      string
	Why        string // how it was chosen, for the log
}

// String describes n for the log, e.g. "10.0.0.2 (the address that routes to MASTER_ADDR 10.0.0.1)".
func (n GlooNetwork) String() string {
	if len(n.Interfaces) > 0 {
		return "interface " + strings.Join(n.Interfaces, ", ") + " (" + n.Why + ")"
	}
	return n.Local + " (" + n.Why + ")"
}

// Gloo chooses the network of this rank's Gloo device: the interfaces of GLOO_SOCKET_IFNAME,
// which must exist, or else the local address of a UDP socket connected to
// MASTER_ADDR:MASTER_PORT, that is the address the kernel's routes pick for reaching rank 0
// (connecting a UDP socket sends nothing). For rank 0 that is MASTER_ADDR itself, and for a
// loopback MASTER_ADDR loopback.
func (e *Env) Gloo() (GlooNetwork, error) {
	if len(e.Interfaces) > 0 {
		for _, name := range e.Interfaces {
			if _, err := net.InterfaceByName(name); err != nil {
				return GlooNetwork{}, fmt.Errorf("dist: %s=%s: no network interface %q on this machine (it has %s)",
					EnvGlooIfname, strings.Join(e.Interfaces, ","), name, interfaceNames())
			}
		}
		return GlooNetwork{Interfaces: e.Interfaces, Why: EnvGlooIfname}, nil
	}
	c, err := net.Dial("udp", net.JoinHostPort(e.Addr, strconv.Itoa(e.Port)))
	if err != nil {
		return GlooNetwork{}, fmt.Errorf("dist: rank %d of %d: no route to %s=%s: %w (set %s to the interface the ranks reach each other through)",
			e.Rank, e.World, EnvMasterAddr, e.Addr, err, EnvGlooIfname)
	}
	defer c.Close()
	ip := c.LocalAddr().(*net.UDPAddr).IP
	return GlooNetwork{Local: ip.String(), Why: "the address that routes to " + EnvMasterAddr + " " + e.Addr}, nil
}

// interfaceNames lists this machine's network interfaces for an error message.
func interfaceNames() string {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return "none that can be listed"
	}
	names := make([]string, len(ifs))
	for i, f := range ifs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Join joins the group on dev (Gloo for the CPU, NCCL for a GPU); n is where Gloo's device
// sits (Gloo's choice; NCCL ignores it and reads its own NCCL_SOCKET_IFNAME). The whole
// join takes at most PFL_DIST_TIMEOUT.
func (e *Env) Join(dev cuda.Device, n GlooNetwork) (*cuda.ProcessGroup, error) {
	g, err := cuda.NewProcessGroup(cuda.GroupConfig{Addr: e.Addr, Port: e.Port, Rank: e.Rank, World: e.World, Timeout: e.Timeout,
		Device: dev, Interfaces: n.Interfaces, Local: n.Local, TimeoutVar: EnvTimeout})
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
		return false, fmt.Errorf("dist: %w", err) // the error names the rank and its lost peers
	}
	sum, err := t.Float64s()
	if err != nil {
		return false, err
	}
	return sum[0] > 0, nil
}
