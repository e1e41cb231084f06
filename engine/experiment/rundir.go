package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"pfl/engine/internal/atomicfile"
)

// lockDir claims the run directory dir for this process, so that two runs with the same
// name cannot interleave their metrics and checkpoints. The lock is an flock(2) on
// "<parent>/.<name>.lock" beside the run directory: the kernel grants it to one open file
// at a time (two runs in one process conflict too) and drops it when its holder exits, so
// a killed run never leaves a stale lock, and a run refused for any reason leaves the run
// directory itself untouched. The holder writes its PID into the file for the message of
// the one it refuses. The returned function releases the lock; the file stays.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			b := make([]byte, 32)
			if n, _ := f.ReadAt(b, 0); n > 0 {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil && pid > 0 {
					holder = fmt.Sprintf("another run (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("%s is being written by %s; choose another name (--set name=...) or wait for it to end", dir, holder)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Only the holder writes: truncate and record this PID.
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// ownFiles are the names of the files pfl writes into a run, suite or grid directory (and
// their maps/ and tb/ folders); ownFile adds the patterns of the rest.
var ownFiles = map[string]bool{
	"config.json": true, "partition.json": true, "checkpoint.safetensors": true, "metrics.jsonl": true,
	"machine.json": true, "summary.json": true, "embeddings.csv": true, "embeddings.csv.tmp": true,
	"embeddings_tsne.csv": true, "gains.csv": true, "novel.csv": true, "results.md": true, "report.html": true,
	"maps.json": true,
}

// ownFigures are the figures pfl draws, each as .png and .svg.
var ownFigures = []string{"accuracy", "loss", "clients", "novel", "gain_density", "embeddings_tsne", "partition"}

// ownFile reports whether name, a file in a directory pfl wrote, is one pfl writes: a name
// of ownFiles, a figure, a grid's sweep-*/clients-* figure, a maps sheet (client<N>.png), a
// TensorBoard event file, or a hidden lock or temporary file (.<name>.lock, .<name>.tmp…).
func ownFile(name string) bool {
	if ownFiles[name] || strings.HasPrefix(name, "events.out.tfevents.") {
		return true
	}
	if strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".lock") || strings.Contains(name, ".tmp")) {
		return true
	}
	base, ext := strings.TrimSuffix(name, filepath.Ext(name)), filepath.Ext(name)
	if ext != ".png" && ext != ".svg" {
		return false
	}
	if slices.Contains(ownFigures, base) || strings.HasPrefix(base, "sweep-") || strings.HasPrefix(base, "clients-") {
		return true
	}
	n, ok := strings.CutPrefix(base, "client")
	_, err := strconv.Atoi(n)
	return ok && err == nil && ext == ".png"
}

// replaceable checks that dir may be replaced by a fresh run, suite or grid (--overwrite):
// it holds a config.json (a run, suite or grid of pfl) and nothing anywhere below it but
// what pfl writes there (ownFile). The error names the directory and the first file pfl
// did not write, which replacing it would delete. A directory that does not exist or is
// empty may be replaced.
func replaceable(dir string) error {
	if !existingRun(dir) {
		return nil
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (d.Type().IsRegular() && ownFile(d.Name())) {
			return nil
		}
		return fmt.Errorf("%s holds %s, which pfl did not write: --overwrite replaces only pfl's own files; move it away or choose another name (--set name=...)", dir, p)
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return fmt.Errorf("%s is not a pfl run, suite or grid (it has no config.json): --overwrite replaces only pfl's own directories; move it away or choose another name (--set name=...)", dir)
	}
	return nil
}

// existingRun reports whether dir already holds files (a run, finished or not).
func existingRun(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) > 0
}

// writeJSON writes v as indented JSON, atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

// LoadRunConfig reads the config a run directory was started with (its config.json). Keys
// the file lacks take their defaults (they were added to pfl after the run started); an
// unknown key is an error naming it.
func LoadRunConfig(dir string) (Config, error) {
	b, path, err := readConfigFile(dir)
	if err != nil {
		return Config{}, err
	}
	cfg, err := decodeConfigJSON(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return placeAt(cfg, dir)
}

// readConfigFile reads dir/config.json, naming dir when it is not a run directory.
func readConfigFile(dir string) ([]byte, string, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil && errors.Is(err, os.ErrNotExist) {
		return nil, path, fmt.Errorf("%s is not a pfl run directory (it has no config.json)", dir)
	}
	return b, path, err
}

// placeAt sets cfg's Out and Name to where dir lies now, whatever config.json says.
func placeAt(cfg Config, dir string) (Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Config{}, err
	}
	cfg.Out, cfg.Name = filepath.Dir(abs), filepath.Base(abs)
	return cfg, nil
}

// decodeConfigJSON decodes a config.json over the defaults, refusing unknown keys and
// trailing data.
func decodeConfigJSON(b []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, err
	}
	if dec.More() {
		return Config{}, fmt.Errorf("data after the config object")
	}
	return cfg.Resolved(), nil
}
