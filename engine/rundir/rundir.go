// Package rundir is the run directory's format: what pfl writes into a run's, a suite's or
// a grid's directory and reads back from it (config.json, the lock beside it,
// checkpoint.safetensors, metrics.jsonl and its TensorBoard copy, summary.json,
// machine.json, embeddings.csv), the layout of a suite's and a grid's runs, and the one
// decision of what pfl may replace (Owned: only what it wrote).
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"pfl/engine/config"
	"pfl/engine/internal/atomicfile"
)

// ownFiles are the names of the files pfl writes into a run, suite or grid directory (and
// their maps/ and tb/ folders); ownFile adds the patterns of the rest.
var ownFiles = map[string]bool{
	"config.json": true, "partition.json": true, CheckpointFile: true, MetricsFile: true,
	"machine.json": true, SummaryFile: true, EmbeddingsFile: true, EmbeddingsFile + ".tmp": true,
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

// Owned is the one decision of whether dir, where a run, suite or grid directory goes,
// holds only what pfl wrote: nothing is there, or an empty folder, or a folder with a
// config.json (a run, suite or grid of pfl) and nothing anywhere below it but files pfl
// writes there (ownFile). Anything else (a file, a link, a folder of other files) is an
// error naming what pfl did not write: pfl never replaces or deletes it, --overwrite or
// not.
func Owned(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is a %s, not a pfl run directory: pfl replaces only its own directories, never a file; move it away or choose another name (--set name=...)", dir, fileKind(st.Mode()))
	case !Existing(dir):
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

// Claim checks that a fresh run, suite or grid (kind names it) may write dir, which it
// then replaces: only what pfl wrote (Owned), and an earlier run only with overwrite,
// unless that run failed before its first round (a failed start, said on log).
func Claim(dir, kind string, overwrite bool, log func(string)) error {
	if err := Owned(dir); err != nil {
		return err
	}
	if Existing(dir) && !overwrite && !replaceFailedStart(dir, log) {
		return fmt.Errorf("%s already holds a %s; continue it with --resume %s, replace it with --overwrite, or choose another name (--set name=...)", dir, kind, dir)
	}
	return nil
}

// Start makes the fresh directory of a run, suite or grid (replacing an old one Claim
// allowed) and writes its config.json.
func Start(dir string, cfg config.Config) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return WriteConfig(dir, cfg)
}

// Begin starts the directory of a suite or grid (kind) afresh, under its lock: claimed
// (Claim), replaced, and its config.json written. Its runs then lock their own
// directories.
func Begin(dir, kind string, cfg config.Config, overwrite bool, log func(string)) error {
	unlock, err := Lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := Claim(dir, kind, overwrite, log); err != nil {
		return err
	}
	return Start(dir, cfg)
}

// Existing reports whether dir already holds files (a run, finished or not).
func Existing(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) > 0
}

// WriteConfig writes dir/config.json: the config a run, suite or grid was started (or is
// resumed) with.
func WriteConfig(dir string, cfg config.Config) error {
	return WriteJSON(filepath.Join(dir, "config.json"), cfg)
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}
