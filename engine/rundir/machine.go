package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"pfl/cuda"
)

// Machine describes where a run (or a resumed part of it) ran, for its report.
type Machine struct {
	Started  time.Time `json:"started"`
	Resumed  bool      `json:"resumed"` // continued from a checkpoint
	Host     string    `json:"host"`
	OS       string    `json:"os"` // GOOS/GOARCH
	CPUs     int       `json:"cpus"`
	Go       string    `json:"go"`
	Revision string    `json:"revision,omitempty"` // the pfl build's VCS revision ("+modified" when the tree was)
	Torch    string    `json:"torch,omitempty"`
	Device   string    `json:"device"` // "cpu", or the CUDA device's name
	CUDA     string    `json:"cuda,omitempty"`
	Workers  int       `json:"workers,omitempty"` // client groups trained at once (train.workers, resolved)
	Threads  int       `json:"threads,omitempty"` // libtorch's intra-op threads
}

// thisMachine describes the current process on device dev.
func thisMachine(dev cuda.Device, resumed bool, workers int) Machine {
	m := Machine{Started: time.Now().UTC().Truncate(time.Second), Resumed: resumed, OS: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), Go: runtime.Version(), Device: dev.String(), Workers: workers}
	m.Host, _ = os.Hostname()
	if m.Revision = BuildRevision(); m.Revision == "" {
		m.Revision = "unknown: built without VCS stamping"
	}
	if info, err := cuda.Capabilities(); err == nil {
		m.Torch, m.Threads = info.TorchVersion, info.NumThreads
		if info.CUDAVersion > 0 {
			m.CUDA = fmt.Sprintf("%d.%d", info.CUDAVersion/1000, info.CUDAVersion%1000/10)
		}
	}
	if dev.IsCUDA() {
		if name, err := cuda.CUDADeviceName(dev.Index); err == nil {
			m.Device = dev.String() + " " + name
		}
	}
	return m
}

// RecordMachine appends this process, training with workers client groups, to
// dir/machine.json (a fresh run starts the list).
func RecordMachine(dir string, dev cuda.Device, resumed bool, workers int) error {
	path := filepath.Join(dir, "machine.json")
	var list []Machine
	if resumed {
		if b, err := os.ReadFile(path); err == nil {
			json.Unmarshal(b, &list) // a damaged list starts again
		}
	}
	return WriteJSON(path, append(list, thisMachine(dev, resumed, workers)))
}

// ReadMachines reads dir/machine.json (nil when absent: runs from before it existed).
func ReadMachines(dir string) []Machine {
	var list []Machine
	if b, err := os.ReadFile(filepath.Join(dir, "machine.json")); err == nil {
		json.Unmarshal(b, &list)
	}
	return list
}

// BuildRevision is the VCS revision Go stamped into this binary ("+modified" when the
// checkout had changes), or "" when the build was not stamped (outside a checkout, or
// -buildvcs=false).
func BuildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && rev != "" {
		rev += "+modified"
	}
	return rev
}
