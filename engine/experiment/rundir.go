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
	if dec.More() {
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
