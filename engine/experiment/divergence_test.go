package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
)

// TestDivergedRunsAreResults: a sweep over a learning rate at which training diverges
// (1e6) and one at which it does not, two members and two seeds, finishes: the four runs
// at 1e6 end as diverged (their summaries say at which round) and the others train; the
// table leaves the diverged runs out of its cells and says how many diverged; resuming the
// grid trains nothing and writes the same table; with StopOnDivergence the same grid stops
// at its first diverged run with the error that names it.
func TestDivergedRunsAreResults(t *testing.T) {
	out := t.TempDir()
	cfg := smallGrid(out, "lr")
	cfg.Data.Partition = "iid"
	cfg.Sweep = []config.SweepAxis{{Key: "train.lr", Values: []string{"1e6", "0.01"}}}
	var log strings.Builder
	res, err := RunGrid(context.Background(), cfg, Options{Observer: Lines{&log}})
	if err != nil {
		t.Fatalf("the grid stopped: %v\n%s", err, log.String())
	}
	if len(res.Runs) != 8 {
		t.Fatalf("%d runs, want 8", len(res.Runs))
	}
	for _, r := range res.Runs {
		high := strings.Contains(r.Dir, "train.lr=1e6")
		if d := r.Summary.Diverged; high != (d != 0) || (high && d != r.Summary.Rounds+1) {
			t.Errorf("%s: diverged at round %d after %d rounds", r.Dir, d, r.Summary.Rounds)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "summary.json")); err != nil {
			t.Error(err)
		}
	}
	table, err := os.ReadFile(filepath.Join(out, "lr", "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 of 2 diverged (round 1, 1)", "Diverged: the run's training loss was not finite", "| train.lr=1e6 (diverged) | train.lr=0.01 |"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("results.md lacks %q:\n%s", want, table)
		}
	}
	// the sweep's figures are drawn with the diverged points left out
	for _, f := range []string{"sweep-accuracy-fedtp.png", "sweep-accuracy-fedperfix.svg", filepath.Join("train.lr=0.01", "accuracy.png")} {
		if _, err := os.Stat(filepath.Join(out, "lr", f)); err != nil {
			t.Error(err)
		}
	}

	log.Reset()
	again, err := ResumeGrid(context.Background(), filepath.Join(out, "lr"), Options{Observer: Lines{&log}})
	if err != nil {
		t.Fatalf("resuming the finished grid: %v\n%s", err, log.String())
	}
	if n := strings.Count(log.String(), "finished before; skipped"); n != 8 {
		t.Errorf("resume skipped %d of 8 runs:\n%s", n, log.String())
	}
	if again.Table != string(table) {
		t.Errorf("the resumed grid's table differs:\n%s\nwas\n%s", again.Table, table)
	}

	cfg.Name = "stop"
	_, err = RunGrid(context.Background(), cfg, Options{StopOnDivergence: true})
	var div *fl.DivergedError
	if !errors.As(err, &div) || !strings.Contains(err.Error(), "continue the whole grid") {
		t.Fatalf("with StopOnDivergence: %v", err)
	}
}
