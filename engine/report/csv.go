package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/rundir"
)

// The tables ExportCSV writes, one file each (tidy, long format: a row per observation,
// the same columns in every row).
const (
	CSVRounds  = "rounds"  // a row per round of every run (metrics.jsonl)
	CSVClients = "clients" // a row per client per evaluated round of every run
	CSVSummary = "summary" // a row per finished run (summary.json)
)

// CSVKinds are the tables, in the order pfl export writes them.
var CSVKinds = []string{CSVRounds, CSVClients, CSVSummary}

// csvRun is one run of the directories ExportCSV is given and what names it in every row.
type csvRun struct {
	experiment string // the directory given (a run, suite or grid)
	dir        string // the run's directory under it
	member     string // its suite member's label; "" outside a suite
	algorithm  string
	seed       uint64
	sweep      []config.SweepValue
}

// ExportCSV writes the table kind (CSVRounds, CSVClients, CSVSummary) of every run that
// dirs stand for (each a run, a suite or a grid, whose runs are walked) to w as CSV: a
// header, then the rows. Every row starts with the columns that name its run: experiment
// (the directory given), run (the run's directory), member, algorithm, seed, then one
// column per swept key (named by the key, empty for a run without it). Accuracies are
// fractions (0–1) as in metrics.jsonl and summary.json; a value that does not apply is
// empty; a value that is not finite is NaN, Inf or -Inf. notes names the runs left out (no
// rounds yet, or, for the summary, not finished).
func ExportCSV(w io.Writer, kind string, dirs []string) (notes []string, err error) {
	if !slices.Contains(CSVKinds, kind) {
		return nil, fmt.Errorf("no table %q: the tables are %v", kind, CSVKinds)
	}
	runs, err := csvRuns(dirs)
	if err != nil {
		return nil, err
	}
	var keys []string // the swept keys, in the order first met
	for _, r := range runs {
		for _, sv := range r.sweep {
			if !slices.Contains(keys, sv.Key) {
				keys = append(keys, sv.Key)
			}
		}
	}
	cw := csv.NewWriter(w)
	// a swept key names its column: no key is one of the run's columns (a sweep of seed is
	// refused; the others are no config keys)
	header := append([]string{"experiment", "run", "member", "algorithm", "seed"}, keys...)
	if err := cw.Write(append(header, csvColumns[kind]...)); err != nil {
		return nil, err
	}
	for _, r := range runs {
		ids := []string{r.experiment, r.dir, r.member, r.algorithm, strconv.FormatUint(r.seed, 10)}
		for _, k := range keys {
			ids = append(ids, r.value(k))
		}
		rows, note, err := csvRows[kind](r.dir)
		if err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, r.dir+": "+note)
		}
		for _, row := range rows {
			if err := cw.Write(append(slices.Clone(ids), row...)); err != nil {
				return nil, err
			}
		}
	}
	cw.Flush()
	return notes, cw.Error()
}

// WriteCSV writes table kind of the runs of dirs (ExportCSV) to the file path, whole or
// not at all (a temporary file beside it, renamed into place): a failure leaves no partial
// table. It returns ExportCSV's notes.
func WriteCSV(path, kind string, dirs []string) ([]string, error) {
	var notes []string
	err := atomicfile.Write(path, func(w io.Writer) error {
		var err error
		notes, err = ExportCSV(w, kind, dirs)
		return err
	})
	return notes, err
}

// value is the run's value of swept key k; "" when its sweep does not set it.
func (r csvRun) value(k string) string {
	for _, sv := range r.sweep {
		if sv.Key == k {
			return sv.Value
		}
	}
	return ""
}

// CSVColumns are table kind's own columns, after those that name the run and the swept
// keys (nil for no such table).
func CSVColumns(kind string) []string { return slices.Clone(csvColumns[kind]) }

// csvColumns are each table's own columns, after those that name the run.
var csvColumns = map[string][]string{
	CSVRounds: {"round", "clients_trained", "samples", "train_loss", "accuracy", "client_mean", "client_std",
		"time_data_s", "time_train_s", "time_aggregate_s", "time_eval_s"},
	CSVClients: {"round", "client", "accuracy", "train_samples", "test_samples", "novel"},
	CSVSummary: {"rounds", "diverged_at_round", "tail_mean", "tail_std", "tail_evals", "tail_trend",
		"final_micro", "final_mean", "final_std", "p10", "p50", "p90", "worst10", "best_micro", "best_round",
		"falling", "client_updates", "samples_per_sec", "wall_seconds", "eval_protocol"},
}

// csvRows are each table's rows of the run in a directory (its own columns only), with a
// note when the run has none to give.
var csvRows = map[string]func(dir string) ([][]string, string, error){
	CSVRounds:  roundRows,
	CSVClients: clientRows,
	CSVSummary: summaryRow,
}

// csvRuns lists the runs of dirs with what names them: a grid's from its layout (point,
// member, seed), a suite's members, or the run itself (its algorithm and seed from its
// config.json, its member and sweep point from its summary.json where it records them).
func csvRuns(dirs []string) ([]csvRun, error) {
	var out []csvRun
	for _, dir := range dirs {
		dir = filepath.Clean(dir)
		runs, err := rundir.Runs(dir)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			cfg, place := r.Config, r.Place
			if r.Single {
				if cfg, err = rundir.LoadConfig(dir); err != nil {
					return nil, err
				}
				if s, err := rundir.ReadSummary(dir); err == nil {
					place = config.Place{Member: s.Member, Sweep: s.Sweep}
				}
			}
			out = append(out, csvRun{experiment: dir, dir: r.Dir, member: place.Member, algorithm: cfg.Algorithm.Name,
				seed: cfg.Seed, sweep: place.Sweep})
		}
	}
	return out, nil
}

// roundRows is a row per round of the run in dir.
func roundRows(dir string) ([][]string, string, error) {
	lines, note, err := rundir.ReadMetrics(dir)
	if err != nil || note != "" {
		return nil, note, err
	}
	var rows [][]string
	for _, m := range lines {
		rows = append(rows, []string{strconv.Itoa(m.Round), strconv.Itoa(len(m.Clients)), strconv.Itoa(m.Samples),
			num(float64(m.TrainLoss)), optNum(m.Micro), optNum(m.Mean), optNum(m.Std),
			num(m.DataS), num(m.TrainS), num(m.AggS), num(m.EvalS)})
	}
	return rows, "", nil
}

// clientRows is a row per client per evaluated round of the run in dir, with the client's
// training and test samples and whether it is novel (held out of training) from its
// partition.json (empty where that file is missing).
func clientRows(dir string) ([][]string, string, error) {
	lines, note, err := rundir.ReadMetrics(dir)
	if err != nil || note != "" {
		return nil, note, err
	}
	var man *data.Manifest
	if b, err := os.ReadFile(filepath.Join(dir, "partition.json")); err == nil {
		man = new(data.Manifest)
		if err := json.Unmarshal(b, man); err != nil {
			return nil, "", fmt.Errorf("%s: %w", filepath.Join(dir, "partition.json"), err)
		}
	}
	var rows [][]string
	for _, m := range lines {
		for c, a := range m.PerClient {
			train, test, novel := "", "", ""
			if man != nil && c < len(man.TrainCount) && c < len(man.TestCount) {
				train, test = strconv.Itoa(sum(man.TrainCount[c])), strconv.Itoa(sum(man.TestCount[c]))
				novel = strconv.FormatBool(slices.Contains(man.Novel, c))
			}
			rows = append(rows, []string{strconv.Itoa(m.Round), strconv.Itoa(c), num(float64(a)), train, test, novel})
		}
	}
	return rows, "", nil
}

// summaryRow is the row of the run in dir from its summary.json; a note when it has none
// (not finished).
func summaryRow(dir string) ([][]string, string, error) {
	s, err := rundir.ReadSummary(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "not finished (no summary.json): left out of the summary", nil
	}
	if err != nil {
		return nil, "", err
	}
	diverged := ""
	if s.Diverged != 0 {
		diverged = strconv.Itoa(s.Diverged)
	}
	return [][]string{{strconv.Itoa(s.Rounds), diverged, num(s.TailMean), num(s.TailStd), strconv.Itoa(s.TailEvals),
		num(s.TailTrend), num(s.FinalMicro), num(s.FinalMean), num(s.FinalStd), num(s.P10), num(s.P50), num(s.P90),
		num(s.Worst10), num(s.Best), strconv.Itoa(s.BestRound), s.Falling, strconv.Itoa(s.ClientUpdates),
		num(s.SamplesPerSec), num(s.WallSeconds), s.EvalProtocol}}, "", nil
}

// num writes a number as pandas and R read it: the shortest exact form, NaN, Inf, -Inf.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// optNum is num of an optional value; "" when absent (a round without an evaluation).
func optNum[T ~float64](v *T) string {
	if v == nil {
		return ""
	}
	return num(float64(*v))
}

// sum adds xs.
func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
