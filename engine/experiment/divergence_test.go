package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	cfg.Sweep = []SweepAxis{{Key: "train.lr", Values: []string{"1e6", "0.01"}}}
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

// TestSuiteTableShowsDivergedAndFalling: a suite's table writes a diverged member as such,
// marks a falling curve in the trend column, and the reading under it ranks the others by
// the FedTP protocol's accuracy, calls each gap clear or within the spread, and names the
// diverged and the falling member.
func TestSuiteTableShowsDivergedAndFalling(t *testing.T) {
	runs := []*Result{
		{Summary: Summary{Name: "local", TailMean: 0.90, TailStd: 0.01, TailEvals: 4}},
		{Summary: Summary{Name: "fedtp", Diverged: 26, Rounds: 25, ClientUpdates: 125}},
		{Summary: Summary{Name: "fedperfix", TailMean: 0.93, TailStd: 0.005, TailEvals: 4}},
		{Summary: Summary{Name: "transfed", TailMean: 0.89, TailStd: 0.01, TailEvals: 4, TailTrend: -0.2,
			Falling: "last evaluation 60.00, 27.40 points under its best (87.40 after round 50)"}},
	}
	got := table(runs, "")
	for _, want := range []string{
		"| fedtp | diverged at round 26 (training loss not finite) | – |",
		"| -20.00 falling |",
		"fedperfix 93.00 > local 90.00 (+3.00, clear of the spread 1.50) > transfed 89.00 (+1.00, within the spread 2.00).",
		"fedtp diverged at round 26",
		"transfed is falling: last evaluation 60.00",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

// TestFallingCurves checks Summary.Falling on crafted histories: a collapse (the last
// evaluation 10 points under the best) and a tail falling by more than twice its spread
// are flagged; a flat noisy tail, a rising one, a drift of half a point in a straight line
// and a drop of 9 points (under the collapse threshold, with a tail too noisy to call) are
// not.
func TestFallingCurves(t *testing.T) {
	for _, c := range []struct {
		name  string
		evals []float64 // evaluations after rounds 5, 10, …; the tail is the last four
		want  string    // a word of the reason, or "" for none
	}{
		{"collapse", []float64{0.5, 0.874, 0.82, 0.74, 0.76, 0.62, 0.545}, "under its best"},
		{"falling tail", []float64{0.5, 0.9, 0.9, 0.9, 0.88, 0.86, 0.84}, "trend"},
		{"flat and noisy", []float64{0.5, 0.9, 0.91, 0.89, 0.91, 0.89, 0.905}, ""},
		{"rising", []float64{0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85}, ""},
		{"a straight drift of half a point", []float64{0.5, 0.9, 0.9, 0.9, 0.9, 0.8983, 0.8967, 0.895}, ""},
		{"a noisy drop of 9 points", []float64{0.5, 0.9, 0.9, 0.9, 0.81, 0.9, 0.81}, ""},
	} {
		var h []fl.RoundMetrics
		for i, a := range c.evals {
			for r := 5 * i; r < 5*i+5; r++ {
				m := fl.RoundMetrics{Round: r, Clients: []int{0}}
				if r == 5*i+4 {
					m.Eval = &fl.EvalResult{Accuracy: []float64{a}, Micro: a, Mean: a}
				}
				h = append(h, m)
			}
		}
		s := summarize(c.name, h, 16, nil)
		if (c.want == "") != (s.Falling == "") || !strings.Contains(s.Falling, c.want) {
			t.Errorf("%s: falling %q (trend %.4f, spread %.4f, best %.3f after round %d, last %.3f); want a reason with %q",
				c.name, s.Falling, s.TailTrend, s.TailStd, s.Best, s.BestRound, s.FinalMicro, c.want)
		}
	}
}

// TestFallingNeedsMoreThanSamplingNoise: the same tail (94.8, 94.7, 93.9, 93.7 after rounds
// 65 to 80: a trend of −1.26 against a spread of 0.47) is within what 2,000 test
// predictions' sampling explains (the trend's sampling error there is
// √(0.943·0.057/2000)·15/√125 = 0.70 points, so the floor is 1.39), and a fall when the
// evaluations count 200,000 predictions (floor 1 point, the minimum).
func TestFallingNeedsMoreThanSamplingNoise(t *testing.T) {
	evals := map[int]float64{5: 0.3, 60: 0.945, 65: 0.948, 70: 0.947, 75: 0.939, 80: 0.937}
	for _, c := range []struct {
		count int
		want  bool
	}{{2000, false}, {200000, true}} {
		var h []fl.RoundMetrics
		for r := 0; r < 80; r++ {
			m := fl.RoundMetrics{Round: r, Clients: []int{0}}
			if a, ok := evals[r+1]; ok {
				m.Eval = &fl.EvalResult{Accuracy: []float64{a}, Micro: a, Mean: a, Count: []int{c.count}}
			}
			h = append(h, m)
		}
		s := summarize("x", h, 16, nil)
		if (s.Falling != "") != c.want {
			t.Errorf("%d predictions: falling %q (trend %.4f, spread %.4f); want falling %v", c.count, s.Falling, s.TailTrend, s.TailStd, c.want)
		}
	}
}
