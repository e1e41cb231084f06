package rundir

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// setupFiles are the files pfl writes in a run, suite or grid directory before the first
// round ends: the config, the partition's description, the machine, an empty metrics file
// and TensorBoard's first event file (in TBDir).
var setupFiles = map[string]bool{"config.json": true, "partition.json": true, "partition.png": true,
	"partition.svg": true, "machine.json": true, MetricsFile: true}

// FailedStart reports whether dir holds only what a run, suite or grid leaves when it
// failed before any of its runs finished a round (missing data, a model that does not fit,
// a run killed while it set up): pfl's own set-up files, no checkpoint, no summary, no
// round in any metrics.jsonl, and no lock that a live process holds. Such a directory
// records nothing worth keeping, so a plain retry may replace it instead of demanding
// --resume or --overwrite; anything else in it (a file pfl does not write, a round done)
// keeps it.
func FailedStart(dir string) bool {
	clean := true
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		switch {
		case d.IsDir():
			return nil // members, sweep points, seeds, the TensorBoard folder
		case !d.Type().IsRegular():
			clean = false // a link or device is no file of pfl's
		case strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".lock"):
			clean = clean && !lockHeld(path)
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp"):
			// atomicfile's temporary file, left by a process killed while it wrote
		case filepath.Base(filepath.Dir(path)) == TBDir && strings.HasPrefix(name, "events.out.tfevents."):
			// the event file starts with a header; rounds are in metrics.jsonl too
		case name == MetricsFile:
			st, err := d.Info()
			clean = clean && err == nil && st.Size() == 0
		default:
			clean = clean && setupFiles[name]
		}
		if !clean {
			return filepath.SkipAll
		}
		return nil
	})
	return err == nil && clean
}

// replaceFailedStart reports whether a fresh start may replace dir because it is what a
// failed start left (FailedStart), saying so on log (nil: nothing).
func replaceFailedStart(dir string, log func(string)) bool {
	if !FailedStart(dir) {
		return false
	}
	if log != nil {
		log("replacing " + dir + ": an earlier start failed before its first round and left only its set-up files")
	}
	return true
}
