package rundir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/internal/jsonfloat"
	"pfl/engine/safetensors"
)

// CheckpointFile holds the state tensors; its metadata holds the history, the config that
// defines the run and checksums, so the parts can never disagree (one atomic rename).
const CheckpointFile = "checkpoint.safetensors"

// HasCheckpoint reports whether the run in dir has written a checkpoint.
func HasCheckpoint(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, CheckpointFile))
	return err == nil
}

// CheckpointRounds is the number of rounds the checkpoint of the run in dir holds (the
// rounds a resume continues after), read from its header alone; 0 when the run has no
// checkpoint. It does not verify the file: Restore does, when the run resumes.
func CheckpointRounds(dir string) (int, error) {
	if !HasCheckpoint(dir) {
		return 0, nil
	}
	path := filepath.Join(dir, CheckpointFile)
	f, err := safetensors.OpenFile(path)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	n, err := strconv.Atoi(f.Metadata["rounds"])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("checkpoint %s: rounds %q is not a count of rounds", path, short(f.Metadata["rounds"]))
	}
	return n, nil
}

// checkpointFormat is the metadata's "format"; version 2 added the checksums and the config.
const checkpointFormat = "pfl-checkpoint-2"

// CheckpointHook, when set (by the tests of a run killed while it saves), wraps the
// checkpoint's writer at stage "write" and is called at stage "rename" once the temporary
// file is complete and synced, just before it replaces the old checkpoint: the points where
// a killed process must leave a usable run behind.
var CheckpointHook func(stage string, w io.Writer) io.Writer

// SaveCheckpoint writes the run's state and history atomically, with wall, the seconds the
// rounds of the history took in all (every segment of a resumed run summed).
func SaveCheckpoint(dir string, cfg config.Config, run *fl.Run, wall float64) error {
	state := run.StateOnDemand()
	h, err := json.Marshal(historyRecords(run.History))
	if err != nil {
		return err
	}
	id, err := identity(cfg)
	if err != nil {
		return err
	}
	// two passes over the state, one tensor at a time: the sum goes in the header, before
	// the data (a run's state can be larger than the memory left on the host)
	sum, err := dataSum(state)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	meta := map[string]string{"format": checkpointFormat, "rounds": strconv.Itoa(len(run.History)),
		"history": string(h), "history_sha256": sum256([]byte(h)), "data_sha256": sum, "config": id,
		"wall_seconds": strconv.FormatFloat(wall, 'g', -1, 64)}
	hook := CheckpointHook
	if hook == nil {
		hook = func(_ string, w io.Writer) io.Writer { return w }
	}
	err = atomicfile.WriteHooked(filepath.Join(dir, CheckpointFile), func(w io.Writer) error {
		return safetensors.Write(hook("write", w), state, meta)
	}, func() { hook("rename", nil) })
	releaseHostMemory()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func sum256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// dataSum is the SHA-256 of the tensors' names, shapes and bytes in file order.
func dataSum(ts []safetensors.Tensor) (string, error) {
	h := sha256.New()
	for _, t := range ts {
		fmt.Fprintf(h, "%s %s %v\n", t.Name, t.DType, t.Shape)
		data, err := t.Bytes() // one tensor's data at a time (a run's state is produced on demand)
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadCheckpoint opens and verifies a run's checkpoint: its format, checksums and history.
// clients is the run's number of clients (each evaluation lists one accuracy per client).
// The tensors' data stays in the file, read one tensor at a time when verified and again
// when loaded (a checkpoint can be larger than the memory left beside the run); the caller
// closes the file.
func ReadCheckpoint(dir string, clients int) (*safetensors.File, []fl.RoundMetrics, string, error) {
	path := filepath.Join(dir, CheckpointFile)
	f, err := safetensors.OpenFile(path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("checkpoint: %w", err)
	}
	history, id, err := verifyCheckpoint(f, clients)
	if err != nil {
		f.Close()
		return nil, nil, "", fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return f, history, id, nil
}

// verifyCheckpoint checks a decoded checkpoint and returns its history and config identity.
func verifyCheckpoint(f *safetensors.File, clients int) ([]fl.RoundMetrics, string, error) {
	m := f.Metadata
	if m["format"] != checkpointFormat {
		return nil, "", fmt.Errorf("format %q, want %q (written by another version of pfl?)", short(m["format"]), checkpointFormat)
	}
	if got := sum256([]byte(m["history"])); got != m["history_sha256"] {
		return nil, "", fmt.Errorf("the history's checksum does not match: the file is damaged")
	}
	got, err := dataSum(f.Tensors)
	if err != nil {
		return nil, "", fmt.Errorf("reading the tensors: %w", err)
	}
	if got != m["data_sha256"] {
		return nil, "", fmt.Errorf("the tensors' checksum does not match: the file is damaged")
	}
	var recs []historyRecord
	if err := json.Unmarshal([]byte(m["history"]), &recs); err != nil {
		return nil, "", fmt.Errorf("bad history: %w", err)
	}
	if n, err := strconv.Atoi(m["rounds"]); err != nil || n != len(recs) {
		return nil, "", fmt.Errorf("rounds %q, but the history holds %d rounds", short(m["rounds"]), len(recs))
	}
	history := make([]fl.RoundMetrics, len(recs))
	for i, r := range recs {
		if err := r.check(i, clients); err != nil {
			return nil, "", fmt.Errorf("history round %d: %w", i+1, err)
		}
		history[i] = r.metrics()
	}
	if m["config"] == "" {
		return nil, "", fmt.Errorf("no config identity")
	}
	return history, m["config"], nil
}

// short bounds a value quoted in an error.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// historyRecord is one round of the checkpoint's history: fl.RoundMetrics with floats that
// JSON can hold whatever their value (a diverged run's NaN loss).
type historyRecord struct {
	Round     int
	Clients   []int
	TrainLoss jsonfloat.Float
	Samples   int
	Eval      *evalRecord `json:",omitempty"`
	Time      fl.Timing
}

type evalRecord struct {
	Correct, Count []int
	Accuracy, Loss []jsonfloat.Float
	Micro          jsonfloat.Float
	Mean, Std      jsonfloat.Float
}

func historyRecords(h []fl.RoundMetrics) []historyRecord {
	out := make([]historyRecord, len(h))
	for i, m := range h {
		out[i] = historyRecord{Round: m.Round, Clients: m.Clients, TrainLoss: jsonfloat.Float(m.TrainLoss), Samples: m.Samples, Time: m.Time}
		if e := m.Eval; e != nil {
			out[i].Eval = &evalRecord{Correct: e.Correct, Count: e.Count, Accuracy: jsonfloat.Slice(e.Accuracy),
				Loss: jsonfloat.Slice(e.Loss), Micro: jsonfloat.Float(e.Micro), Mean: jsonfloat.Float(e.Mean), Std: jsonfloat.Float(e.Std)}
		}
	}
	return out
}

func (r historyRecord) metrics() fl.RoundMetrics {
	m := fl.RoundMetrics{Round: r.Round, Clients: r.Clients, TrainLoss: float64(r.TrainLoss), Samples: r.Samples, Time: r.Time}
	if e := r.Eval; e != nil {
		m.Eval = &fl.EvalResult{Correct: e.Correct, Count: e.Count, Accuracy: jsonfloat.Float64s(e.Accuracy),
			Loss: jsonfloat.Float64s(e.Loss), Micro: float64(e.Micro), Mean: float64(e.Mean), Std: float64(e.Std)}
	}
	return m
}

// check reports a record that no run of clients clients could have written as round i.
func (r historyRecord) check(i, clients int) error {
	if r.Round != i {
		return fmt.Errorf("numbered %d", r.Round+1)
	}
	if r.Samples < 0 || r.Time.Data < 0 || r.Time.Train < 0 || r.Time.Aggregate < 0 || r.Time.Eval < 0 {
		return fmt.Errorf("negative or impossible counts")
	}
	for j, c := range r.Clients {
		if c < 0 || c >= clients || (j > 0 && c <= r.Clients[j-1]) {
			return fmt.Errorf("client list %v is not a sorted list of distinct clients below %d", r.Clients, clients)
		}
	}
	if e := r.Eval; e != nil {
		// name the list whose length is wrong: the four lists have one entry per client
		for _, l := range []struct {
			name string
			n    int
		}{{"correct counts", len(e.Correct)}, {"sample counts", len(e.Count)}, {"accuracies", len(e.Accuracy)}, {"losses", len(e.Loss)}} {
			if l.n != clients {
				return fmt.Errorf("its evaluation lists %d %s, but the run has %d clients (one each)", l.n, l.name, clients)
			}
		}
		for c := range e.Correct {
			if e.Correct[c] < 0 || e.Count[c] < e.Correct[c] {
				return fmt.Errorf("client %d: %d correct of %d", c, e.Correct[c], e.Count[c])
			}
		}
	}
	return nil
}

// Restore loads the checkpoint into run after checking that it belongs to cfg's run, and
// returns the seconds its rounds took (wallSeconds).
func Restore(dir string, cfg config.Config, run *fl.Run) (float64, error) {
	f, history, id, err := ReadCheckpoint(dir, run.Clients())
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := sameRun(id, cfg); err != nil {
		return 0, fmt.Errorf("%s: %w", dir, err)
	}
	if len(history) > cfg.Train.Rounds {
		return 0, fmt.Errorf("%s: the checkpoint holds %d rounds, more than train.rounds = %d", dir, len(history), cfg.Train.Rounds)
	}
	wall, err := wallSeconds(f.Metadata, history)
	if err != nil {
		return 0, fmt.Errorf("checkpoint %s: %w", filepath.Join(dir, CheckpointFile), err)
	}
	if err := run.Restore(f, history); err != nil {
		return 0, fmt.Errorf("checkpoint %s: %w", filepath.Join(dir, CheckpointFile), err)
	}
	releaseHostMemory()
	return wall, nil
}

// wallSeconds is the seconds the checkpoint's rounds took in all, as it records them; a
// checkpoint from before it did gets the sum of its rounds' own times (data, training,
// aggregation, evaluation), which leaves out the writing of checkpoints and metrics.
func wallSeconds(meta map[string]string, history []fl.RoundMetrics) (float64, error) {
	if v, ok := meta["wall_seconds"]; ok {
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || !(w >= 0) || math.IsInf(w, 0) {
			return 0, fmt.Errorf("wall_seconds %q is not a duration in seconds", short(v))
		}
		return w, nil
	}
	var d time.Duration
	for _, m := range history {
		d += m.Time.Data + m.Time.Train + m.Time.Aggregate + m.Time.Eval
	}
	return d.Seconds(), nil
}

// releaseHostMemory returns what reading or writing a checkpoint left idle to the system:
// the CPU cache's idle blocks (the tensors' staging copies) and the Go heap's freed spans
// (each tensor's host bytes, garbage once copied). Without it a resumed FedTP run at the
// default model trained 1 GB above a fresh one.
func releaseHostMemory() {
	cuda.ReleaseHostCache()
	debug.FreeOSMemory()
}

// resumable lists the keys a resumed run may change: how long it runs and how often it
// evaluates, saves and summarizes. Every other key defines the experiment.
var resumable = []string{"train.rounds", "train.eval_every", "train.checkpoint_every", "train.tail_rounds"}

// ResumableKeys lists the keys a resumed run may change (--set with --resume); every other
// key defines the experiment, and name and out are where it lies.
func ResumableKeys() []string { return slices.Clone(resumable) }

// identity is the JSON of the config's keys that define the run (all but resumable ones and
// the run's location).
func identity(cfg config.Config) (string, error) {
	flat, err := config.Flatten(cfg)
	if err != nil {
		return "", err
	}
	for _, k := range append([]string{"name", "out"}, resumable...) {
		delete(flat, k)
	}
	b, err := json.Marshal(flat) // map keys sorted
	return string(b), err
}

// sameRun refuses a config whose defining keys differ from the checkpoint's, naming them.
func sameRun(id string, cfg config.Config) error {
	var saved map[string]any
	if err := json.Unmarshal([]byte(id), &saved); err != nil {
		return fmt.Errorf("checkpoint's config: %w", err)
	}
	now, err := identity(cfg)
	if err != nil {
		return err
	}
	var cur map[string]any
	json.Unmarshal([]byte(now), &cur)
	// a checkpoint of a config read before the device was parsed where the config is read
	// records it as written ("cuda"): compare the devices, not their spellings
	if d, ok := saved["device"].(string); ok {
		if dev, err := cuda.ParseDevice(d); err == nil {
			saved["device"] = dev.String()
		}
	}
	var diff []string
	for k, v := range cur {
		w, ok := saved[k]
		if !ok && v == nil {
			continue // a key added since the checkpoint, left unset
		}
		if !ok || !jsonEqual(v, w) {
			diff = append(diff, fmt.Sprintf("%s (checkpoint %s, config %s)", k, short(jsonText(w)), short(jsonText(v))))
		}
	}
	for k, w := range saved {
		if _, ok := cur[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s (checkpoint %s, config none)", k, short(jsonText(w))))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		return fmt.Errorf("the config (config.json and any --set) differs from the run the checkpoint belongs to in %v; only %v may change on resume",
			diff, resumable)
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonEqual(a, b any) bool { return jsonText(a) == jsonText(b) }
