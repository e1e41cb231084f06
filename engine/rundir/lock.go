package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Lock claims the run directory dir for this process, so that two runs with the same
// name cannot interleave their metrics and checkpoints. The lock is an flock(2) on
// "<parent>/.<name>.lock" beside the run directory: the kernel grants it to one open file
// at a time (two runs in one process conflict too) and drops it when its holder exits, so
// a killed run never leaves a stale lock, and a run refused for any reason leaves the run
// directory itself untouched. The holder writes its PID into the file for the message of
// the one it refuses. The returned function releases the lock and removes the file, so
// that a run, finished, failed or stopped, leaves no lock file behind (only a process
// killed outright does, which the next run takes over).
func Lock(dir string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".lock")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			defer f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%s is being written by %s; choose another name (--set name=...) or wait for it to end", dir, lockHolder(f))
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		// A holder removes the file before it unlocks: a lock taken on a file that is no
		// longer at path (removed, or replaced by another run's) guards nothing, so try again.
		if !samePath(f, path) {
			f.Close()
			continue
		}
		// Only the holder writes: truncate and record this PID.
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		return func() {
			os.Remove(path)
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}, nil
	}
}

// lockHolder names the process holding the lock file f, from the PID it wrote.
func lockHolder(f *os.File) string {
	b := make([]byte, 32)
	if n, _ := f.ReadAt(b, 0); n > 0 {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil && pid > 0 {
			return fmt.Sprintf("another run (pid %d)", pid)
		}
	}
	return "another process"
}

// samePath reports whether the open file f is the file at path now.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// lockHeld reports whether a process holds the run lock file path (Lock); a lock that
// cannot be checked counts as held.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
