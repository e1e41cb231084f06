package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// exportTable runs ExportCSV and parses what it wrote: the header and the rows as maps.
func exportTable(t *testing.T, kind string, dirs ...string) ([]string, []map[string]string, []string) {
	t.Helper()
	var buf bytes.Buffer
	notes, err := report.ExportCSV(&buf, kind, dirs)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("%s: not CSV: %v", kind, err)
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return recs[0], rows, notes
}

// sameNumber checks that a CSV cell holds want exactly (as the JSON files hold it).
func sameNumber(t *testing.T, what, got string, want float64) {
	t.Helper()
	v, err := strconv.ParseFloat(got, 64)
	if err != nil || v != want {
		t.Errorf("%s: %q, want %v", what, got, want)
	}
}

// TestExportCSV: a run, a suite and a small grid export their rounds, clients and
// summaries as CSV tables whose rows name the algorithm, the seed, the suite member and the
// sweep point, and whose numbers are those of metrics.jsonl and summary.json; summary.json
// names them too, and one written before it did still loads and exports.
func TestExportCSV(t *testing.T) {
	out := t.TempDir()
	single := smallRun(out, "one")
	single.Seed = 7
	if _, err := RunWith(context.Background(), single, Options{}); err != nil {
		t.Fatal(err)
	}
	suite := smallRun(out, "suite")
	suite.Suite = []string{"fedavg", "mine: algorithm.name=local"}
	if _, err := RunSuite(context.Background(), suite, nil); err != nil {
		t.Fatal(err)
	}
	grid := smallRun(out, "grid")
	grid.Data.Partition = "dirichlet"
	grid.Seeds = []uint64{1, 2}
	grid.Sweep = []config.SweepAxis{{Key: "data.alpha", Values: []string{"0.3", "1"}}}
	if _, err := RunGrid(context.Background(), grid, Options{}); err != nil {
		t.Fatal(err)
	}
	runDir, suiteDir, gridDir := filepath.Join(out, "one"), filepath.Join(out, "suite"), filepath.Join(out, "grid")
	t.Run("summary.json", func(t *testing.T) { summaryNamesTheRun(t, runDir, suiteDir, gridDir) })
	t.Run("tables", func(t *testing.T) { tablesNameTheRuns(t, runDir, suiteDir, gridDir) })
	t.Run("numbers", func(t *testing.T) { numbersAreTheRuns(t, runDir) })
	t.Run("older and unfinished runs", func(t *testing.T) { olderAndUnfinished(t, runDir, out) })
}

// summaryNamesTheRun: summary.json names the run within its experiment.
func summaryNamesTheRun(t *testing.T, runDir, suiteDir, gridDir string) {
	for dir, want := range map[string]rundir.Summary{
		runDir:                          {Algorithm: "fedavg", Seed: 7},
		filepath.Join(suiteDir, "mine"): {Algorithm: "local", Seed: 1, Member: "mine"},
		filepath.Join(gridDir, "data.alpha=1", "seed-2"): {Algorithm: "fedavg", Seed: 2, Sweep: []config.SweepValue{{Key: "data.alpha", Value: "1"}}},
	} {
		s, err := rundir.ReadSummary(dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Algorithm != want.Algorithm || s.Seed != want.Seed || s.Member != want.Member || !reflect.DeepEqual(s.Sweep, want.Sweep) {
			t.Errorf("%s/summary.json names %q seed %d member %q sweep %v; want %+v", dir, s.Algorithm, s.Seed, s.Member, s.Sweep, want)
		}
	}

}

// tablesNameTheRuns: every table of the three experiments together has the columns that
// name a run, the swept key's, then its own, and a row for every run.
func tablesNameTheRuns(t *testing.T, runDir, suiteDir, gridDir string) {
	ids := []string{"experiment", "run", "member", "algorithm", "seed"}
	for _, c := range []struct {
		kind string
		rows int // of the three experiments together: 1 + 2 + 4 runs
	}{
		{report.CSVRounds, 7 * 2},
		{report.CSVClients, 7 * 2 * 4},
		{report.CSVSummary, 7},
	} {
		t.Run(c.kind, func(t *testing.T) {
			header, rows, notes := exportTable(t, c.kind, runDir, suiteDir, gridDir)
			want := append(append(append([]string{}, ids...), "data.alpha"), report.CSVColumns(c.kind)...)
			if !reflect.DeepEqual(header, want) {
				t.Fatalf("header %v\nwant %v", header, want)
			}
			if len(rows) != c.rows || len(notes) != 0 {
				t.Fatalf("%d rows, notes %v; want %d rows", len(rows), notes, c.rows)
			}
			seen := map[string]bool{}
			for _, r := range rows {
				seen[r["run"]+" "+r["member"]+" "+r["algorithm"]+" "+r["seed"]+" "+r["data.alpha"]] = true
			}
			for _, w := range []string{runDir + "  fedavg 7 ", filepath.Join(suiteDir, "fedavg") + " fedavg fedavg 1 ",
				filepath.Join(suiteDir, "mine") + " mine local 1 ", filepath.Join(gridDir, "data.alpha=0.3", "seed-1") + "  fedavg 1 0.3",
				filepath.Join(gridDir, "data.alpha=1", "seed-2") + "  fedavg 2 1"} {
				if !seen[w] {
					t.Errorf("no row of %q among %v", w, seen)
				}
			}
		})
	}

}

// numbersAreTheRuns: the tables hold the numbers of the run's metrics.jsonl and
// summary.json.
func numbersAreTheRuns(t *testing.T, runDir string) {
	_, rows, _ := exportTable(t, report.CSVRounds, runDir)
	b, _ := os.ReadFile(filepath.Join(runDir, "metrics.jsonl"))
	lines, err := rundir.ParseMetrics(b)
	if err != nil || len(rows) != len(lines) {
		t.Fatalf("%d rows for %d rounds (%v)", len(rows), len(lines), err)
	}
	for i, m := range lines {
		sameNumber(t, "round accuracy", rows[i]["accuracy"], float64(*m.Micro))
		sameNumber(t, "train loss", rows[i]["train_loss"], float64(m.TrainLoss))
		if rows[i]["round"] != strconv.Itoa(i+1) || rows[i]["clients_trained"] != "2" || rows[i]["experiment"] != runDir {
			t.Errorf("round row %v", rows[i])
		}
	}
	_, rows, _ = exportTable(t, report.CSVClients, runDir)
	last := lines[len(lines)-1]
	for c, a := range last.PerClient {
		r := rows[len(rows)-len(last.PerClient)+c]
		sameNumber(t, "client accuracy", r["accuracy"], float64(a))
		if r["client"] != strconv.Itoa(c) || r["round"] != "2" || r["novel"] != "false" || r["train_samples"] == "" || r["test_samples"] == "" {
			t.Errorf("client row %v", r)
		}
	}
	_, rows, _ = exportTable(t, report.CSVSummary, runDir)
	s, _ := rundir.ReadSummary(runDir)
	sameNumber(t, "tail mean", rows[0]["tail_mean"], s.TailMean)
	sameNumber(t, "final mean", rows[0]["final_mean"], s.FinalMean)
	if rows[0]["rounds"] != "2" || rows[0]["diverged_at_round"] != "" || rows[0]["eval_protocol"] != s.EvalProtocol {
		t.Errorf("summary row %v", rows[0])
	}

}

// olderAndUnfinished: a summary.json of an earlier pfl, without the new keys, loads, and the
// export takes the algorithm and seed from config.json; an unfinished run has its rounds but
// no summary row, and a note; an unknown table and a folder that is no run are errors.
func olderAndUnfinished(t *testing.T, runDir, out string) {
	path := filepath.Join(runDir, "summary.json")
	s, err := rundir.ReadSummary(runDir)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	delete(tree, "algorithm")
	delete(tree, "seed")
	b, _ = json.Marshal(tree)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if old, err := rundir.ReadSummary(runDir); err != nil || old.Algorithm != "" || old.TailMean != s.TailMean {
		t.Fatalf("an earlier summary.json: %+v, %v", old, err)
	}
	if _, rows, _ := exportTable(t, report.CSVSummary, runDir); rows[0]["algorithm"] != "fedavg" || rows[0]["seed"] != "7" {
		t.Errorf("an earlier run's summary row %v", rows[0])
	}

	// an unfinished run: its rounds so far, no summary row, a note
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, rows, notes := exportTable(t, report.CSVSummary, runDir); len(rows) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "not finished") {
		t.Errorf("an unfinished run: rows %v, notes %v", rows, notes)
	}
	if _, err := report.ExportCSV(&bytes.Buffer{}, "runs", []string{runDir}); err == nil || !strings.Contains(err.Error(), "rounds clients summary") {
		t.Errorf("an unknown table: %v", err)
	}
	if _, err := report.ExportCSV(&bytes.Buffer{}, report.CSVRounds, []string{out}); err == nil || !strings.Contains(err.Error(), "not a pfl run directory") {
		t.Errorf("a folder that is no run: %v", err)
	}
}
