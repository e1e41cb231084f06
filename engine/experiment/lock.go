package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile marks a run directory as being written by a live process.
const lockFile = ".lock"

// lockDir claims dir for this process, so that two runs with the same name cannot
// interleave their metrics and checkpoints. A lock left by a process that is gone (killed)
// is taken over. The returned function releases it.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockFile)
	for attempt := 0; attempt < 2; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		b, _ := os.ReadFile(path)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if perr == nil && pid > 0 && syscall.Kill(pid, 0) == nil {
			return nil, fmt.Errorf("%s is being written by another pfl process (pid %d); choose another name (--set name=...) or wait for it", dir, pid)
		}
		os.Remove(path) // stale: its process is gone
	}
	return nil, fmt.Errorf("%s: could not take the run directory's lock %s", dir, path)
}
