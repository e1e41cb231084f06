package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/report"
	"pfl/engine/rundir"
)

// smallGrid is a 2-point sweep of two members and two seeds: eight runs of two rounds.
func smallGrid(out, name string) config.Config {
	cfg := smallRun(out, name)
	cfg.Data.Partition = "dirichlet"
	cfg.Suite = []string{"fedavg", "local"}
	cfg.Seeds = []uint64{1, 2}
	cfg.Sweep = []config.SweepAxis{{Key: "data.alpha", Values: []string{"0.3", "1"}}}
	return cfg
}

func TestGridExpandsPointsMembersAndSeeds(t *testing.T) {
	out := t.TempDir()
	cfg := smallGrid(out, "g")
	cfg.Sweep = append(cfg.Sweep, config.SweepAxis{Key: "train.participation", Values: []string{"0.25", "0.5", "1"}})
	g, err := config.NewGrid(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Runs) != 2*3*2*2 {
		t.Fatalf("%d runs, want 24", len(g.Runs))
	}
	// the first key varies slowest, then the second, then members, then seeds
	l := g.Runs[4*4+2+1] // point 4 (alpha 1, participation 0.5) of 4 runs each, local, seed 2
	want := filepath.Join(out, "g", "data.alpha=1,train.participation=0.5", "local", "seed-2")
	if l.Dir() != want || l.Config.Data.Alpha != 1 || l.Config.Train.Participation != 0.5 || l.Config.Algorithm.Name != "local" || l.Config.Seed != 2 {
		t.Fatalf("run %s: alpha %g participation %g %s seed %d; want %s", l.Dir(), l.Config.Data.Alpha, l.Config.Train.Participation,
			l.Config.Algorithm.Name, l.Config.Seed, want)
	}
	if l.Config.IsGrid() || len(l.Config.Suite) > 0 {
		t.Fatal("a run of the grid keeps the grid's keys")
	}

	// without a sweep and suite: <name>/seed-<s>; without seeds: <name>/<point>/<member>
	cfg = smallRun(out, "s")
	cfg.Seeds = []uint64{7, 3}
	if g, err = config.NewGrid(cfg); err != nil {
		t.Fatal(err)
	}
	if len(g.Runs) != 2 || g.Runs[1].Dir() != filepath.Join(out, "s", "seed-3") {
		t.Fatalf("seeds only: %d runs, the second in %s", len(g.Runs), g.Runs[1].Dir())
	}
	cfg = smallGrid(out, "p")
	cfg.Seeds = nil
	if g, err = config.NewGrid(cfg); err != nil {
		t.Fatal(err)
	}
	if len(g.Runs) != 4 || g.Runs[1].Dir() != filepath.Join(out, "p", "data.alpha=0.3", "local") || g.Runs[1].Config.Seed != 1 {
		t.Fatalf("sweep without seeds: %d runs, the second in %s", len(g.Runs), g.Runs[1].Dir())
	}
}

func TestGridRefusesBadKeysBeforeWritingAnything(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*config.Config)
		want []string
	}{
		{"unknown key", func(c *config.Config) { c.Sweep[0].Key = "data.alhpa" }, []string{"sweep: data.alhpa", "unknown key"}},
		{"a section", func(c *config.Config) { c.Sweep[0].Key = "data" }, []string{"sweep: data", "unknown key"}},
		{"seed", func(c *config.Config) { c.Sweep[0].Key = "seed" }, []string{"sweep: seed", "seeds"}},
		{"seed and seeds", func(c *config.Config) { c.Seed = 5 }, []string{"seed and seeds are both set"}},
		{"a seed twice", func(c *config.Config) { c.Seeds = []uint64{1, 1} }, []string{"seeds", "twice"}},
		{"no values", func(c *config.Config) { c.Sweep[0].Values = nil }, []string{"sweep: data.alpha", "no values"}},
		{"a value twice", func(c *config.Config) { c.Sweep[0].Values = []string{"1", "1"} }, []string{"sweep: data.alpha", "twice"}},
		// the second point is bad: nothing may run, nothing may be written
		{"a bad point", func(c *config.Config) { c.Sweep[0].Values = []string{"0.3", "-1"} }, []string{"sweep point data.alpha=-1", "data.alpha: -1"}},
		{"a wrong type", func(c *config.Config) {
			c.Sweep[0] = config.SweepAxis{Key: "data.clients", Values: []string{"4", "many"}}
		},
			[]string{"sweep point data.clients=many", "clients"}},
		{"a member sets a swept key", func(c *config.Config) { c.Suite = []string{"fedavg", "a: data.alpha=2"} },
			[]string{"data.alpha is also set by suite member a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			cfg := smallGrid(out, "g")
			c.edit(&cfg)
			_, err := RunGrid(context.Background(), cfg, Options{})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v; want it to say %q", err, w)
				}
			}
			if _, serr := os.Stat(filepath.Join(out, "g")); serr == nil {
				t.Errorf("the refused grid wrote %s", filepath.Join(out, "g"))
			}
		})
	}
}

// stopAfter cancels after the rounds of all runs add up to at, and records the log.
type stopAfter struct {
	at, done *int
	cancel   func()
	log      *[]string
}

func (s stopAfter) Round(fl.RoundMetrics, Progress) {
	if *s.done++; *s.done == *s.at {
		s.cancel()
	}
}
func (s stopAfter) Log(msg string) { *s.log = append(*s.log, msg) }

func TestGridResumesWhereItStoppedAndTabulatesSeeds(t *testing.T) {
	out := t.TempDir()
	cfg := smallGrid(out, "g")
	// uninterrupted
	whole, err := RunGrid(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// stopped in the second run's first round, then resumed
	cfg.Name = "r"
	ctx, cancel := context.WithCancel(context.Background())
	at, done, log := 3, 0, []string{}
	if _, err := RunGrid(ctx, cfg, Options{Observer: stopAfter{&at, &done, cancel, &log}}); err == nil || !strings.HasSuffix(err.Error(), "continue with: pfl train --resume "+filepath.Join(out, "r")) {
		t.Fatalf("%v; want an interruption naming the grid (not its run) to resume", err)
	}
	dir := filepath.Join(out, "r")
	if !rundir.IsGrid(dir) || rundir.IsSuite(dir) {
		t.Fatal("the grid's directory is not recognised as a grid")
	}
	at, done, log = -1, 0, nil
	resumed, err := ResumeGrid(context.Background(), dir, Options{Observer: stopAfter{&at, &done, func() {}, &log}})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(log, "\n")
	if strings.Count(joined, "finished before; skipped") != 1 || !strings.Contains(joined, "after round 1") {
		t.Fatalf("resume log:\n%s\nwant the first run skipped and the second resumed after round 1", joined)
	}
	if done != 1+6*2 {
		t.Fatalf("the resumed grid trained %d rounds, want 13 (one of the second run, two of each of six more)", done)
	}
	// on the CPU a resumed run equals an uninterrupted one, so the tables agree to the digit
	// (the sweep tables hold accuracies only, no wall time)
	if resumed.Table != whole.Table {
		t.Fatalf("resumed table\n%s\nuninterrupted\n%s", resumed.Table, whole.Table)
	}

	rows := gridTables(t, whole)
	gridReport(t, whole, rows)
	// a finished grid resumes into nothing but its tables
	at, done, log = -1, 0, nil
	if _, err := ResumeGrid(context.Background(), whole.Dir, Options{Observer: stopAfter{&at, &done, func() {}, &log}}); err != nil || done != 0 {
		t.Fatalf("resuming a finished grid: %v, %d rounds trained", err, done)
	}
}

// gridTables checks the uninterrupted grid's results.md: every cell the mean ± sample std
// of its seeds' own summaries, the per-client table, the client updates; and its files. It
// returns the rows of the FedTP-protocol table.
func gridTables(t *testing.T, whole *GridResult) []string {
	t.Helper()
	// every cell is the mean ± sample std of its seeds' own summaries
	var rows []string
	for _, a := range []string{"0.3", "1"} {
		row := "| " + a + " |"
		for _, m := range []string{"fedavg", "local"} {
			var xs []float64
			for _, s := range []string{"seed-1", "seed-2"} {
				b, err := os.ReadFile(filepath.Join(whole.Dir, "data.alpha="+a, m, s, "summary.json"))
				if err != nil {
					t.Fatal(err)
				}
				var sum rundir.Summary
				if err := json.Unmarshal(b, &sum); err != nil {
					t.Fatal(err)
				}
				xs = append(xs, 100*sum.TailMean)
			}
			mean, d := (xs[0]+xs[1])/2, xs[0]-xs[1]
			std := max(d, -d) / 1.4142135623730951 // n − 1 = 1: |x1 − x2| / √2
			row += fmt.Sprintf(" %.2f ± %.2f |", mean, std)
		}
		rows = append(rows, row)
	}
	for _, r := range rows {
		if !strings.Contains(whole.Table, r) {
			t.Errorf("table lacks the row %q:\n%s", r, whole.Table)
		}
	}
	// the per-client table: client 3 of local at alpha 1 under the first seed (client 3 of
	// the second seed is another client of another partition)
	pc, err := rundir.FinalPerClient(filepath.Join(whole.Dir, "data.alpha=1", "local", "seed-1"))
	if err != nil {
		t.Fatal(err)
	}
	client := fmt.Sprintf(" %.2f |\n", 100*pc[3])
	i := strings.Index(whole.Table, "local: final accuracy of every client")
	if i < 0 || !strings.Contains(whole.Table[i:], "\n| 3 | ") || !strings.HasSuffix(strings.SplitAfter(whole.Table[i:][strings.Index(whole.Table[i:], "\n| 3 | "):], "\n")[1], client) {
		t.Errorf("local's per-client table lacks client 3's %q:\n%s", client, whole.Table)
	}
	for _, w := range []string{"| data.alpha | fedavg | local |", "across the 2 seeds", "client updates (local trainings per run):\n\n| data.alpha | fedavg | local |\n|---|---|---|\n| 0.3 | 4 | 8 |\n| 1 | 4 | 8 |"} {
		if !strings.Contains(whole.Table, w) {
			t.Errorf("table lacks %q:\n%s", w, whole.Table)
		}
	}
	for _, f := range []string{"results.md", "config.json", "sweep-accuracy-fedtp.png", "sweep-accuracy-fedperfix.svg",
		"data.alpha=0.3/accuracy.png", "data.alpha=1/local/seed-2/summary.json", "clients-local.png"} {
		if _, err := os.Stat(filepath.Join(whole.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	return rows
}

// gridReport checks the grid's report: the sweep tables, a linked row per run, the sweep
// plots, the runs' pages (rows: gridTables').
func gridReport(t *testing.T, whole *GridResult, rows []string) {
	t.Helper()
	// the report: the sweep tables, a linked row per run, the sweep plots, the runs' pages
	pages, err := report.Write(whole.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 1+8 {
		t.Fatalf("report wrote %d pages, want the sweep's and 8 runs'", len(pages))
	}
	b, err := os.ReadFile(pages[0])
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, w := range []string{`class="grid-table"`, `<th class="name">data.alpha</th><th>fedavg</th><th>local</th>`, `href="data.alpha=1/local/seed-2/report.html"`,
		"against data.alpha", "pfl report of a sweep", strings.TrimSuffix(strings.TrimPrefix(rows[1], "| 1 | "), " |")[:5]} {
		if !strings.Contains(page, w) {
			t.Errorf("the sweep's report lacks %q", w)
		}
	}
	if b, err := os.ReadFile(filepath.Join(whole.Dir, "data.alpha=1/local/seed-2/report.html")); err != nil || !strings.Contains(string(b), `href="../../../report.html"`) {
		t.Errorf("a run's page does not link back to the sweep's (%v)", err)
	}
}

func TestSeedsWithoutSweepTabulateMembers(t *testing.T) {
	out := t.TempDir()
	cfg := smallRun(out, "s")
	cfg.Seeds = []uint64{1, 2}
	res, err := RunGrid(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || !strings.Contains(res.Table, "| fedavg | ") || strings.Count(res.Table, "±") < 4 {
		t.Fatalf("table:\n%s", res.Table)
	}
	// 2 of 4 clients in each of 2 rounds, the same under both seeds: one count, no ±
	if !strings.Contains(res.Table, "| worst 10%, % | client updates | wall s |") || !strings.Contains(res.Table, " | 4 | ") {
		t.Errorf("table lacks fedavg's 4 client updates:\n%s", res.Table)
	}
	for _, f := range []string{"accuracy.png", "seed-1/summary.json", "seed-2/metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	for name, err := range map[string]error{"maps": func() error { _, err := Maps(res.Dir, MapOptions{}); return err }(),
		"eval": func() error { _, _, err := Evaluate(res.Dir); return err }(), "tsne": report.EmbeddingTSNE(res.Dir)} {
		if err == nil || !strings.Contains(err.Error(), "pfl "+name+" "+filepath.Join(res.Dir, "seed-1")) {
			t.Errorf("pfl %s of the grid's directory: %v; want a refusal naming a run", name, err)
		}
	}
	if _, err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "RunGrid") {
		t.Fatalf("Run of a config with seeds: %v", err)
	}
}
