package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// the one it refuses. The returned function releases the lock and removes the file, so
// that a run, finished, failed or stopped, leaves no lock file behind (only a process
// killed outright does, which the next run takes over).
func lockDir(dir string) (func(), error) {
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

// pflDir is the one decision of whether dir, where a run, suite or grid directory goes,
// holds only what pfl wrote: nothing is there, or an empty folder, or a folder with a
// config.json (a run, suite or grid of pfl) and nothing anywhere below it but files pfl
// writes there (ownFile). Anything else (a file, a link, a folder of other files) is an
// error naming what pfl did not write: pfl never replaces or deletes it, --overwrite or
// not.
func pflDir(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is a %s, not a pfl run directory: pfl replaces only its own directories, never a file; move it away or choose another name (--set name=...)", dir, fileKind(st.Mode()))
	case !existingRun(dir):
		return nil // an empty folder
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (d.Type().IsRegular() && ownFile(d.Name())) {
			return nil
		}
		return fmt.Errorf("%s holds %s, which pfl did not write: pfl replaces only its own files, even with --overwrite; move it away or choose another name (--set name=...)", dir, p)
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return fmt.Errorf("%s is not a pfl run, suite or grid (it has no config.json): pfl replaces only its own directories, even with --overwrite; move it away or choose another name (--set name=...)", dir)
	}
	return nil
}

// fileKind names what a mode describes, for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}

// claimDir checks that a fresh run, suite or grid (kind names it) may write dir, which it
// then replaces: only what pfl wrote (pflDir), and an earlier run only with overwrite,
// unless that run failed before its first round (replaceFailedStart, said on obs).
func claimDir(dir, kind string, overwrite bool, obs Observer) error {
	if err := pflDir(dir); err != nil {
		return err
	}
	if existingRun(dir) && !overwrite && !replaceFailedStart(dir, obs) {
		return fmt.Errorf("%s already holds a %s; continue it with --resume %s, replace it with --overwrite, or choose another name (--set name=...)", dir, kind, dir)
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
	b, err := ReadConfigFile(path)
	if err != nil && errors.Is(err, os.ErrNotExist) {
		return nil, path, fmt.Errorf("%s is not a pfl run directory (it has no config.json)", dir)
	}
	return b, path, err
}

// MaxConfigBytes bounds what is read of a config file (YAML, or a run's config.json): a
// config is a few kilobytes, and reading /dev/zero or a mistaken data file whole would
// exhaust the memory.
const MaxConfigBytes = 4 << 20

// ReadConfigFile reads the config file at path, refusing one larger than MaxConfigBytes
// with an error naming the file and the bound.
func ReadConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most pfl reads of a config file (a config is a few KB: is it the right file?)", path, MaxConfigBytes>>20)
	}
	return b, nil
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

// decodeConfigJSON decodes a config.json over the defaults, refusing unknown keys,
// missing keys and trailing data.
func decodeConfigJSON(b []byte) (Config, error) {
	b, err := unsetLegacyZeros(b)
	if err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, fmt.Errorf("data after the config object")
	}
	if err := completeConfigJSON(b); err != nil {
		return Config{}, err
	}
	return cfg.Resolved(), nil
}

// legacyZeroKeys are the keys that were plain numbers, 0 meaning unset (the preset's or the
// algorithm's value), before they became optional (null when unset): a config.json written
// then records 0 where the run used the default. pfl never writes an explicit 0 there now
// (validation refuses it), so a 0 in such a file is read as unset.
var legacyZeroKeys = []string{"model.depth", "model.patch", "model.dim", "model.heads", "model.head_dim",
	"model.mlp", "model.prompts", "model.prefix.blocks", "model.prefix.mid", "model.prefix.scale",
	"model.prefix.length", "model.adapter.mid", "model.adapter.scale"}

// unsetLegacyZeros rewrites legacyZeroKeys' zeros in a config.json as null (b unchanged when
// it has none).
func unsetLegacyZeros(b []byte) ([]byte, error) {
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	changed := false
	for _, key := range legacyZeroKeys {
		parts := strings.Split(key, ".")
		m := tree
		for _, p := range parts[:len(parts)-1] {
			if m, _ = m[p].(map[string]any); m == nil {
				break
			}
		}
		if v, ok := m[parts[len(parts)-1]].(float64); ok && v == 0 {
			m[parts[len(parts)-1]] = nil
			changed = true
		}
	}
	if !changed {
		return b, nil
	}
	return json.Marshal(tree)
}

// completeConfigJSON refuses a config.json that lacks a key every run writes (all but
// seeds and sweep, which a run without them leaves out): decoded over the defaults, a
// truncated or hand-made file ({} at the extreme) would describe the default run, and a
// report or resume would show or continue a run that never was.
func completeConfigJSON(b []byte) error {
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	have := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			have[prefix+k] = true
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			}
		}
	}
	walk("", tree)
	want, err := flatten(DefaultConfig())
	if err != nil {
		return err
	}
	var missing []string
	for k := range want {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	list := strings.Join(missing, ", ")
	if len(missing) > 5 {
		list = fmt.Sprintf("%s and %d more", strings.Join(missing[:5], ", "), len(missing)-5)
	}
	return fmt.Errorf("lacks %s (keys every run writes): not a config.json pfl wrote, or cut short", list)
}
