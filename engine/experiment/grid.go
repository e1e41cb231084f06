package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"pfl/engine/internal/atomicfile"
)

// A grid is a config with seeds or a sweep: the cross product of its sweep points, its
// suite members and its seeds, one run each. The runs lie in
//
//	<out>/<name>/[<point>/][<member>/][seed-<s>/]
//
// where a level is there only when the config has it (a point is named from its values,
// "data.alpha=0.1,train.participation=0.25"; a member is a suite label), so a config
// without seeds and sweep keeps the single run's and the suite's layout.
type grid struct {
	dir     string
	cfg     Config  // as given (unresolved, so that a swept key's followers follow it)
	points  []point // one, unnamed, without a sweep
	members []string
	seeds   []uint64 // one (cfg.Seed) without seeds
	leaves  []leaf
	runs    []*Result // one per leaf once run
}

// point is one combination of the sweep's values.
type point struct {
	name   string      // directory name; "" without a sweep
	values []string    // one per sweep axis, as written
	sets   [][2]string // key, value
}

// leaf is one run of the grid.
type leaf struct {
	point, member, seed int
	cfg                 Config // resolved and validated; Out/Name is its directory
}

func (l leaf) dir() string { return filepath.Join(l.cfg.Out, l.cfg.Name) }

// IsGrid reports whether cfg runs as a grid (RunGrid): it has seeds or a sweep.
func (c Config) IsGrid() bool { return len(c.Seeds) > 0 || len(c.Sweep) > 0 }

// GridResult is a finished grid: every run, the tables and where they were written.
type GridResult struct {
	Dir   string
	Runs  []*Result // in the grid's order: points, then members, then seeds
	Table string    // the Markdown tables, also written to Dir/results.md
}

// RunGrid runs a config with seeds or a sweep: every suite member (or the single run) at
// every sweep point once per seed, each in its own directory, then writes
// Out/Name/config.json, results.md (mean ± std across seeds; with a sweep, one table per
// metric with a row per point and a column per member), accuracy curves (a mean line and
// a min–max band across seeds) and, with a sweep, one plot per metric against the swept
// value. Every run's config is made and checked before anything is written. An existing
// directory is refused unless opts.Overwrite; an interrupted grid continues with
// ResumeGrid.
func RunGrid(ctx context.Context, cfg Config, opts Options) (*GridResult, error) {
	g, err := newGrid(cfg)
	if err != nil {
		return nil, err
	}
	var leaves []Config
	for _, l := range g.leaves {
		leaves = append(leaves, l.cfg)
	}
	if err := dataThere(ctx, leaves); err != nil {
		return nil, err
	}
	unlock, err := lockDir(g.dir)
	if err != nil {
		return nil, err
	}
	err = claimDir(g.dir, "grid", opts.Overwrite, opts.Observer)
	if err == nil {
		err = os.RemoveAll(g.dir)
	}
	if err == nil {
		err = os.MkdirAll(g.dir, 0o755)
	}
	if err == nil {
		err = writeJSON(filepath.Join(g.dir, "config.json"), g.cfg)
	}
	unlock()
	if err != nil {
		return nil, err
	}
	return g.run(ctx, false, opts)
}

// ResumeGrid continues the grid in dir: finished runs are skipped (their summaries read
// back), runs with a checkpoint resume from it, runs never started start; the tables and
// plots are written at the end.
func ResumeGrid(ctx context.Context, dir string, opts Options) (*GridResult, error) {
	g, err := openGrid(dir)
	if err != nil {
		return nil, err
	}
	return g.run(ctx, true, opts)
}

// openGrid reads the grid in dir (its config.json as written) and lays out its runs.
func openGrid(dir string) (*grid, error) {
	cfg, err := loadGridConfig(dir)
	if err != nil {
		return nil, err
	}
	if !cfg.IsGrid() {
		return nil, fmt.Errorf("%s has neither seeds nor a sweep", dir)
	}
	g, err := newGrid(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return g, nil
}

// IsGrid reports whether the directory dir holds a grid (seeds or a sweep).
func IsGrid(dir string) bool {
	cfg, err := loadGridConfig(dir)
	return err == nil && cfg.IsGrid()
}

// FirstRuns are the directories of the grid in dir that stand for it in maps: the first
// seed of every member at the first sweep point (`pfl report` draws their maps when the
// grid has none).
func FirstRuns(dir string) ([]string, error) {
	g, err := openGrid(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range g.leaves {
		if l.point == 0 && l.seed == 0 {
			out = append(out, l.dir())
		}
	}
	return out, nil
}

// notAGrid refuses the directory of a grid for a command that reads one run (or suite),
// naming a run of the grid to give it instead.
func notAGrid(dir, command string) error {
	cfg, err := loadGridConfig(dir)
	if err != nil || !cfg.IsGrid() {
		return nil
	}
	example := "<run dir>"
	if g, err := newGrid(cfg); err == nil {
		example = g.leaves[0].dir()
	}
	return fmt.Errorf("%s holds a grid (seeds or a sweep) of runs; give %s one of them, e.g. %s %s", dir, command, command, example)
}

// loadGridConfig reads a grid's config.json as written: unlike LoadRunConfig it does not
// resolve it, so that each point resolves with its own values (a swept train.lr is
// followed by the keys that follow it).
func loadGridConfig(dir string) (Config, error) {
	b, path, err := readConfigFile(dir)
	if err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := completeConfigJSON(b); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return placeAt(cfg, dir)
}

// CheckGrid makes every run of a config with seeds or a sweep and validates it, as RunGrid
// does before it writes anything: the first invalid value is an error naming the point,
// member and seed and the key.
func CheckGrid(cfg Config) error {
	_, err := newGrid(cfg)
	return err
}

// newGrid expands cfg into its runs and checks every one of them.
func newGrid(cfg Config) (*grid, error) {
	if cfg.Name == "" {
		cfg.Name = cfg.Resolved().Name
	}
	if err := cfg.Resolved().Validate(); err != nil {
		return nil, err
	}
	if !cfg.IsGrid() {
		return nil, fmt.Errorf("seeds, sweep: neither is set; run the config with Run or RunSuite")
	}
	g := &grid{dir: filepath.Join(cfg.Out, cfg.Name), cfg: cfg, points: sweepPoints(cfg.Sweep), seeds: cfg.Seeds}
	if len(g.seeds) == 0 {
		g.seeds = []uint64{cfg.Seed}
	}
	var members []member
	for _, entry := range cfg.Suite {
		m, err := parseMember(entry)
		if err != nil {
			return nil, err
		}
		for _, kv := range m.sets {
			for _, a := range cfg.Sweep {
				if kv[0] == a.Key {
					return nil, fmt.Errorf("sweep: %s is also set by suite member %s; a key is either swept or set by members", a.Key, m.label)
				}
			}
		}
		members = append(members, m)
		g.members = append(g.members, m.label)
	}
	names := map[string]bool{}
	for pi, p := range g.points {
		if problem := folderName(p.name); p.name != "" && problem != "" {
			return nil, fmt.Errorf("sweep: point %s: its folder name is %s; sweep fewer keys or shorter values", p.name, problem)
		}
		if names[p.name] {
			return nil, fmt.Errorf("sweep: two points are both named %q (values that differ only in characters a folder name cannot hold)", p.name)
		}
		names[p.name] = true
		pc := cfg
		pc.Seeds, pc.Sweep, pc.Suite, pc.SuiteTable = nil, nil, nil, ""
		pc, err := setKeys(pc, "sweep point "+p.name, p.sets)
		if err != nil {
			return nil, err
		}
		mcs := []Config{pc}
		if len(members) > 0 {
			mcs = nil
			for _, m := range members {
				mc, err := m.apply(pc)
				if err != nil {
					return nil, err
				}
				mcs = append(mcs, mc)
			}
		}
		for mi, mc := range mcs {
			for si, seed := range g.seeds {
				lc := mc
				lc.Seed = seed
				parts := []string{g.dir}
				if p.name != "" {
					parts = append(parts, p.name)
				}
				if len(members) > 0 {
					parts = append(parts, members[mi].label)
				}
				if len(cfg.Seeds) > 0 {
					parts = append(parts, fmt.Sprintf("seed-%d", seed))
				}
				dir := filepath.Join(parts...)
				lc.Out, lc.Name = filepath.Dir(dir), filepath.Base(dir)
				lc = lc.Resolved()
				if err := lc.Validate(); err != nil {
					return nil, fmt.Errorf("%s: %w", g.where(p, mi, si), err)
				}
				g.leaves = append(g.leaves, leaf{point: pi, member: mi, seed: si, cfg: lc})
			}
		}
	}
	return g, nil
}

// where names a run of the grid for messages: "sweep point data.alpha=0.1, suite member
// fedavg, seed 2".
func (g *grid) where(p point, member, seed int) string {
	var parts []string
	if p.name != "" {
		parts = append(parts, "sweep point "+p.name)
	}
	if len(g.members) > 0 {
		parts = append(parts, "suite member "+g.members[member])
	}
	if len(g.cfg.Seeds) > 0 {
		parts = append(parts, fmt.Sprintf("seed %d", g.seeds[seed]))
	}
	return strings.Join(parts, ", ")
}

// place is leaf l's place in the grid: its member's label and its sweep point's values.
func (g *grid) place(l leaf) Place {
	var p Place
	if len(g.members) > 0 {
		p.Member = g.members[l.member]
	}
	for _, kv := range g.points[l.point].sets {
		p.Sweep = append(p.Sweep, SweepValue{Key: kv[0], Value: kv[1]})
	}
	return p
}

// sweepPoints is the cross product of the axes' values, the first axis varying slowest;
// one unnamed point without a sweep.
func sweepPoints(axes []SweepAxis) []point {
	pts := []point{{}}
	for _, a := range axes {
		var next []point
		for _, p := range pts {
			for _, v := range a.Values {
				q := point{values: append(append([]string{}, p.values...), v),
					sets: append(append([][2]string{}, p.sets...), [2]string{a.Key, v})}
				next = append(next, q)
			}
		}
		pts = next
	}
	for i := range pts {
		var parts []string
		for _, kv := range pts[i].sets {
			parts = append(parts, kv[0]+"="+folderSafe(kv[1]))
		}
		pts[i].name = strings.Join(parts, ",")
	}
	return pts
}

// folderSafe turns a value into part of a folder name: no separators, no spaces.
func folderSafe(v string) string {
	return strings.NewReplacer("/", "_", `\`, "_", " ", "", ":", "_").Replace(v)
}

// finished reads back the summary of a run that has done all its rounds (nil otherwise).
func finished(l leaf) *Result {
	b, err := os.ReadFile(filepath.Join(l.dir(), "summary.json"))
	if err != nil {
		return nil
	}
	var s Summary
	// a run that diverged is finished too: resuming it would diverge again at the same round
	if json.Unmarshal(b, &s) != nil || (s.Rounds != l.cfg.Train.Rounds && s.Diverged == 0) {
		return nil
	}
	return &Result{Dir: l.dir(), Summary: s}
}

// run runs (or, resuming, continues) every run of the grid, then writes its outputs.
func (g *grid) run(ctx context.Context, resume bool, opts Options) (*GridResult, error) {
	obs := opts.Observer
	if obs == nil {
		obs = quiet{}
	}
	res := &GridResult{Dir: g.dir}
	count := newRunCounter(len(g.leaves))
	for _, l := range g.leaves {
		rel, _ := filepath.Rel(g.dir, l.dir())
		obs.Log(count.next(rel))
		r := (*Result)(nil)
		if resume {
			r = finished(l)
		}
		if r != nil {
			obs.Log("finished before; skipped")
			res.Runs = append(res.Runs, r)
			continue
		}
		var err error
		lo := Options{Observer: obs, StopOnDivergence: opts.StopOnDivergence, Place: g.place(l)}
		if _, statErr := os.Stat(filepath.Join(l.dir(), checkpointFile)); resume && (statErr == nil || existingRun(l.dir())) {
			r, err = ResumeWith(ctx, l.cfg, lo)
		} else {
			// a run that never wrote a checkpoint failed or was stopped while starting
			lo.Overwrite = resume
			r, err = RunWith(ctx, l.cfg, lo)
		}
		if err != nil {
			if ie := resumeAt(err, g.dir); ie != err {
				return res, fmt.Errorf("%s: %s: %w", g.dir, g.where(g.points[l.point], l.member, l.seed), ie)
			}
			return res, fmt.Errorf("%s: %s: %w (continue the whole grid with: pfl train --resume %s)", g.dir, g.where(g.points[l.point], l.member, l.seed), err, g.dir)
		}
		count.trained()
		res.Runs = append(res.Runs, r)
	}
	g.runs = res.Runs
	res.Table = g.tables(res.Runs)
	if err := g.clientPlots(); err != nil {
		return res, err
	}
	if err := atomicfile.WriteBytes(filepath.Join(g.dir, "results.md"), []byte(res.Table)); err != nil {
		return res, err
	}
	return res, g.plots()
}

// metric is a number of a run's summary that the grid's tables and plots report.
type metric struct {
	key, title string
	of         func(*Summary) float64
}

// gridMetrics are both papers' headline accuracies (see table): FedTP's (micro accuracy
// averaged over the last evaluations) and FedPerfix's (final per-client mean).
var gridMetrics = []metric{
	{"accuracy-fedtp", "accuracy, FedTP protocol (micro, mean over the last evaluations), %", func(s *Summary) float64 { return 100 * s.TailMean }},
	{"accuracy-fedperfix", "accuracy, FedPerfix protocol (final per-client mean), %", func(s *Summary) float64 { return 100 * s.FinalMean }},
}

// stats is the mean and the sample standard deviation (n − 1 in the denominator) of xs;
// the deviation is NaN for one value.
func stats(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// cell formats a metric's values across seeds: "81.20 ± 0.35" (mean ± sample std), or the
// one value.
func cell(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	m, s := stats(xs)
	if math.IsNaN(s) {
		return fmt.Sprintf("%.2f", m)
	}
	return fmt.Sprintf("%.2f ± %.2f", m, s)
}

// updatesCell is the client updates of a cell's runs: one count when every seed did the
// same (the schedule fixes it), else the range (a run that diverged stopped early).
func updatesCell(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo == hi {
		return fmt.Sprintf("%.0f", lo)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// values collects a metric of the runs at point p for member m, one per seed that did not
// diverge (a diverged run's numbers are of the rounds before it stopped: flags counts it).
func (g *grid) values(runs []*Result, p, m int, of func(*Summary) float64) []float64 {
	var out []float64
	for i, l := range g.leaves {
		if i < len(runs) && l.point == p && l.member == m && runs[i].Summary.Diverged == 0 {
			out = append(out, of(&runs[i].Summary))
		}
	}
	return out
}

// flags says which runs at point p of member m diverged or have a falling curve, e.g.
// "2 of 5 diverged (rounds 26, 43); 1 falling", or "" when none did.
func (g *grid) flags(runs []*Result, p, m int) string {
	var rounds []string
	total, fell := 0, 0
	for i, l := range g.leaves {
		if i >= len(runs) || l.point != p || l.member != m {
			continue
		}
		total++
		switch s := runs[i].Summary; {
		case s.Diverged != 0:
			rounds = append(rounds, strconv.Itoa(s.Diverged))
		case s.Falling != "":
			fell++
		}
	}
	var out []string
	if len(rounds) > 0 {
		out = append(out, fmt.Sprintf("%d of %d diverged (round %s)", len(rounds), total, strings.Join(rounds, ", ")))
	}
	if fell > 0 {
		out = append(out, fmt.Sprintf("%d of %d falling", fell, total))
	}
	return strings.Join(out, "; ")
}

// flagged is a cell followed by the runs' flags, if any.
func flagged(cell, flags string) string {
	if flags == "" {
		return cell
	}
	return cell + " (" + flags + ")"
}

// memberNames are the columns of the tables: the suite's labels, or the algorithm.
func (g *grid) memberNames() []string {
	if len(g.members) > 0 {
		return g.members
	}
	return []string{g.leaves[0].cfg.Algorithm.Name}
}

// tables writes results.md: what ± means, then without a sweep one row per member with
// both metrics, worst 10% and wall time; with a sweep one table per metric, a row per
// point (a column per swept key) and a column per member.
func (g *grid) tables(runs []*Result) string {
	var b strings.Builder
	if len(g.cfg.Seeds) > 0 {
		fmt.Fprintf(&b, "Each cell is the mean ± sample standard deviation (n − 1) across the %d seeds %v of the per-run metric (every run's own number under the protocol named, computed as for a single run).\n\n",
			len(g.seeds), g.seeds)
	} else {
		fmt.Fprintf(&b, "One run per cell (seed %d); no ± across seeds.\n\n", g.seeds[0])
	}
	names := g.memberNames()
	if len(g.cfg.Sweep) == 0 {
		fmt.Fprintln(&b, "| algorithm | "+gridMetrics[0].title+" | "+gridMetrics[1].title+" | trend over last evals, points | worst 10%, % | client updates | wall s |")
		fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
		for mi, name := range names {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, flagged(cell(g.values(runs, 0, mi, gridMetrics[0].of)), g.flags(runs, 0, mi)),
				cell(g.values(runs, 0, mi, gridMetrics[1].of)), cell(g.values(runs, 0, mi, tailTrend)),
				cell(g.values(runs, 0, mi, func(s *Summary) float64 { return 100 * s.Worst10 })),
				updatesCell(g.values(runs, 0, mi, func(s *Summary) float64 { return float64(s.ClientUpdates) })),
				cell(g.values(runs, 0, mi, func(s *Summary) float64 { return s.WallSeconds })))
		}
		fmt.Fprintln(&b, "\n"+trendText+" "+flagText)
		return b.String() + noteText(g.cfg.Note)
	}
	for i, met := range gridMetrics {
		g.sweepTable(&b, met.title, names, func(pi, mi int) string {
			if i > 0 {
				return cell(g.values(runs, pi, mi, met.of))
			}
			return flagged(cell(g.values(runs, pi, mi, met.of)), g.flags(runs, pi, mi))
		})
	}
	g.sweepTable(&b, "client updates (local trainings per run)", names, func(pi, mi int) string {
		return updatesCell(g.values(runs, pi, mi, func(s *Summary) float64 { return float64(s.ClientUpdates) }))
	})
	g.sweepTable(&b, "trend over the last evaluations, points", names, func(pi, mi int) string {
		return cell(g.values(runs, pi, mi, tailTrend))
	})
	fmt.Fprintln(&b, trendText+" "+flagText)
	return b.String() + noteText(g.cfg.Note) + g.clientTables(runs)
}

// tailTrend is a run's Summary.TailTrend in points.
func tailTrend(s *Summary) float64 { return 100 * s.TailTrend }

// trendText says how to read the trend column or table.
const trendText = "Trend: the rise of the least-squares line through the FedTP-protocol evaluations of the last train.tail_rounds rounds, in points; one near 0 (within a few of the evaluations' ± std) is a curve that has flattened, a larger one a curve still moving when the run stopped."

// flagText says what the flags in a table mean.
const flagText = "Diverged: the run's training loss was not finite at that round, which ended it; its numbers are left out of the cells. Falling: the curve's last evaluation is 10 or more points under its best, or its trend is below −2 × the spread of the last evaluations and down by more than the test set's sampling explains (at least 1 point and twice the trend's sampling error)."

// noteText is the config's note as a paragraph of results.md, or nothing.
func noteText(note string) string {
	if note == "" {
		return ""
	}
	return "\n" + note + "\n"
}

// sweepTable writes one table of a sweep: a row per point (its values), a column per
// member, each cell at(point, member), after the title and a blank line.
func (g *grid) sweepTable(b *strings.Builder, title string, names []string, at func(pi, mi int) string) {
	fmt.Fprintf(b, "%s:\n\n|", title)
	for _, a := range g.cfg.Sweep {
		fmt.Fprintf(b, " %s |", a.Key)
	}
	for _, n := range names {
		fmt.Fprintf(b, " %s |", n)
	}
	fmt.Fprintf(b, "\n|%s\n", strings.Repeat("---|", len(g.cfg.Sweep)+len(names)))
	for pi, p := range g.points {
		fmt.Fprint(b, "|")
		for _, v := range p.values {
			fmt.Fprintf(b, " %s |", v)
		}
		for mi := range names {
			fmt.Fprintf(b, " %s |", at(pi, mi))
		}
		fmt.Fprintln(b)
	}
	fmt.Fprintln(b)
}

// numeric reads a sweep's values as numbers, or reports that one is not.
func numeric(values []string) ([]float64, bool) {
	var out []float64
	for _, v := range values {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// maxClientTable is the most clients a sweep's per-client tables and plots show (FedTP's
// noise study, Fig. 10(b), has 10).
const maxClientTable = 20

// finalPerClient is the last evaluation's accuracy of every client (metrics.jsonl).
func finalPerClient(dir string) ([]float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return nil, err
	}
	lines, err := parseMetrics(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "metrics.jsonl"), err)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if pc := lines[i].PerClient; pc != nil {
			out := make([]float64, len(pc))
			for c, a := range pc {
				out[c] = float64(a)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s has no evaluated round", dir)
}

// perClient is every client's final accuracy (%) of member m at point p under the first
// seed (client i of another seed is another client: the partition follows the seed), one
// slice per client; nil when the run's metrics cannot be read, empty when it diverged.
func (g *grid) perClient(p, m int) [][]float64 {
	var out [][]float64
	for _, l := range g.leaves {
		if l.point != p || l.member != m || l.seed != 0 {
			continue
		}
		if divergedAt(l.dir()) != 0 {
			return [][]float64{} // a diverged run's last evaluation is of an earlier round
		}
		acc, err := finalPerClient(l.dir())
		if err != nil {
			return nil
		}
		for c, a := range acc {
			if c >= len(out) {
				out = append(out, nil)
			}
			out[c] = append(out[c], 100*a)
		}
	}
	return out
}

// clientTables is, for a sweep over at most maxClientTable clients, each member's final
// per-client accuracy at every point under the first seed (FedTP Fig. 10(b): every
// client's accuracy at each noise level, one run each).
func (g *grid) clientTables(runs []*Result) string {
	clients := g.leaves[0].cfg.Data.Clients
	if len(g.cfg.Sweep) == 0 || clients > maxClientTable || len(runs) < len(g.leaves) {
		return ""
	}
	var b strings.Builder
	for mi, name := range g.memberNames() {
		cols := make([][][]float64, len(g.points))
		for pi := range g.points {
			if cols[pi] = g.perClient(pi, mi); cols[pi] == nil {
				return b.String()
			}
		}
		fmt.Fprintf(&b, "%s: final accuracy of every client (%%, the last evaluation) under seed %d, a column per sweep point", name, g.seeds[0])
		for _, a := range g.cfg.Sweep {
			if a.Key == "data.noise" {
				fmt.Fprintf(&b, "; under data.noise σ_M client i's inputs get Gaussian noise of std σ_M·i/(N−1), N = %d (FedTP §IV-C.2)", clients)
			}
		}
		fmt.Fprint(&b, ":\n\n| client |")
		for pi, p := range g.points {
			if len(cols[pi]) == 0 {
				fmt.Fprintf(&b, " %s (diverged) |", p.name)
				continue
			}
			fmt.Fprintf(&b, " %s |", p.name)
		}
		fmt.Fprintf(&b, "\n|%s\n", strings.Repeat("---|", len(g.points)+1))
		for c := 0; c < clients; c++ {
			fmt.Fprintf(&b, "| %d |", c)
			for pi := range g.points {
				var xs []float64
				if c < len(cols[pi]) {
					xs = cols[pi][c]
				}
				fmt.Fprintf(&b, " %s |", cell(xs))
			}
			fmt.Fprintln(&b)
		}
		fmt.Fprintln(&b)
	}
	return b.String()
}
