package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"pfl/engine/config"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/rundir"
)

// gridRuns is a grid with the summaries of its runs, in the grid's order (nil where a run
// has not finished).
type gridRuns struct {
	*config.Grid
	runs []*rundir.Summary
}

// Grid writes a finished grid's outputs into its directory: results.md (mean ± std across
// seeds; with a sweep, one table per metric with a row per point and a column per member),
// each point's accuracy curves (a mean line and a min–max band across seeds) and, with a
// sweep, one figure per metric against the swept value and the per-client figures. runs
// are the summaries of g.Runs; it returns the Markdown tables.
func Grid(g *config.Grid, runs []*rundir.Summary) (string, error) {
	gr := &gridRuns{Grid: g, runs: runs}
	text := gr.tables()
	if err := gr.clientPlots(); err != nil {
		return text, err
	}
	if err := atomicfile.WriteBytes(filepath.Join(g.Dir, "results.md"), []byte(text)); err != nil {
		return text, err
	}
	return text, gr.plots()
}

// metric is a number of a run's summary that the grid's tables and plots report.
type metric struct {
	key, title string
	of         func(*rundir.Summary) float64
}

// gridMetrics are both papers' headline accuracies (see table): FedTP's (micro accuracy
// averaged over the last evaluations) and FedPerfix's (final per-client mean).
var gridMetrics = []metric{
	{"accuracy-fedtp", "accuracy, FedTP protocol (micro, mean over the last evaluations), %", func(s *rundir.Summary) float64 { return 100 * s.TailMean }},
	{"accuracy-fedperfix", "accuracy, FedPerfix protocol (final per-client mean), %", func(s *rundir.Summary) float64 { return 100 * s.FinalMean }},
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

// values collects a metric of the finished runs at point p for member m, one per seed
// that did not diverge (a diverged run's numbers are of the rounds before it stopped: flags
// counts it).
func (g *gridRuns) values(p, m int, of func(*rundir.Summary) float64) []float64 {
	var out []float64
	for i, l := range g.Runs {
		if s := g.summary(i); s != nil && l.Point == p && l.Member == m && s.Diverged == 0 {
			out = append(out, of(s))
		}
	}
	return out
}

// summary is run i's summary; nil when it has not finished.
func (g *gridRuns) summary(i int) *rundir.Summary {
	if i >= len(g.runs) {
		return nil
	}
	return g.runs[i]
}

// flags says which runs at point p of member m diverged or have a falling curve, e.g.
// "2 of 5 diverged (rounds 26, 43); 1 falling", or "" when none did.
func (g *gridRuns) flags(p, m int) string {
	var rounds []string
	total, fell := 0, 0
	for i, l := range g.Runs {
		s := g.summary(i)
		if s == nil || l.Point != p || l.Member != m {
			continue
		}
		total++
		switch {
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

// tables writes results.md: what ± means, then without a sweep one row per member with
// both metrics, worst 10% and wall time; with a sweep one table per metric, a row per
// point (a column per swept key) and a column per member.
func (g *gridRuns) tables() string {
	var b strings.Builder
	if len(g.Config.Seeds) > 0 {
		fmt.Fprintf(&b, "Each cell is the mean ± sample standard deviation (n − 1) across the %d seeds %v of the per-run metric (every run's own number under the protocol named, computed as for a single run).\n\n",
			len(g.Seeds), g.Seeds)
	} else {
		fmt.Fprintf(&b, "One run per cell (seed %d); no ± across seeds.\n\n", g.Seeds[0])
	}
	names := g.MemberNames()
	if len(g.Config.Sweep) == 0 {
		fmt.Fprintln(&b, "| algorithm | "+gridMetrics[0].title+" | "+gridMetrics[1].title+" | trend over last evals, points | worst 10%, % | client updates | wall s |")
		fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
		for mi, name := range names {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, flagged(cell(g.values(0, mi, gridMetrics[0].of)), g.flags(0, mi)),
				cell(g.values(0, mi, gridMetrics[1].of)), cell(g.values(0, mi, tailTrend)),
				cell(g.values(0, mi, func(s *rundir.Summary) float64 { return 100 * s.Worst10 })),
				updatesCell(g.values(0, mi, func(s *rundir.Summary) float64 { return float64(s.ClientUpdates) })),
				cell(g.values(0, mi, func(s *rundir.Summary) float64 { return s.WallSeconds })))
		}
		fmt.Fprintln(&b, "\n"+trendText+" "+flagText)
		return b.String() + noteText(g.Config.Note)
	}
	for i, met := range gridMetrics {
		g.sweepTable(&b, met.title, names, func(pi, mi int) string {
			if i > 0 {
				return cell(g.values(pi, mi, met.of))
			}
			return flagged(cell(g.values(pi, mi, met.of)), g.flags(pi, mi))
		})
	}
	g.sweepTable(&b, "client updates (local trainings per run)", names, func(pi, mi int) string {
		return updatesCell(g.values(pi, mi, func(s *rundir.Summary) float64 { return float64(s.ClientUpdates) }))
	})
	g.sweepTable(&b, "trend over the last evaluations, points", names, func(pi, mi int) string {
		return cell(g.values(pi, mi, tailTrend))
	})
	fmt.Fprintln(&b, trendText+" "+flagText)
	return b.String() + noteText(g.Config.Note) + g.clientTables()
}

// tailTrend is a run's Summary.TailTrend in points.
func tailTrend(s *rundir.Summary) float64 { return 100 * s.TailTrend }

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
func (g *gridRuns) sweepTable(b *strings.Builder, title string, names []string, at func(pi, mi int) string) {
	fmt.Fprintf(b, "%s:\n\n|", title)
	for _, a := range g.Config.Sweep {
		fmt.Fprintf(b, " %s |", a.Key)
	}
	for _, n := range names {
		fmt.Fprintf(b, " %s |", n)
	}
	fmt.Fprintf(b, "\n|%s\n", strings.Repeat("---|", len(g.Config.Sweep)+len(names)))
	for pi, p := range g.Points {
		fmt.Fprint(b, "|")
		for _, v := range p.Values {
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

// perClient is every client's final accuracy (%) of member m at point p under the first
// seed (client i of another seed is another client: the partition follows the seed), one
// slice per client; nil when the run's metrics cannot be read, empty when it diverged.
func (g *gridRuns) perClient(p, m int) [][]float64 {
	var out [][]float64
	for _, l := range g.Runs {
		if l.Point != p || l.Member != m || l.Seed != 0 {
			continue
		}
		if rundir.DivergedAt(l.Dir()) != 0 {
			return [][]float64{} // a diverged run's last evaluation is of an earlier round
		}
		acc, err := rundir.FinalPerClient(l.Dir())
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
func (g *gridRuns) clientTables() string {
	clients := g.Runs[0].Config.Data.Clients
	if len(g.Config.Sweep) == 0 || clients > maxClientTable || len(g.runs) < len(g.Runs) {
		return ""
	}
	var b strings.Builder
	for mi, name := range g.MemberNames() {
		cols := make([][][]float64, len(g.Points))
		for pi := range g.Points {
			if cols[pi] = g.perClient(pi, mi); cols[pi] == nil {
				return b.String()
			}
		}
		fmt.Fprintf(&b, "%s: final accuracy of every client (%%, the last evaluation) under seed %d, a column per sweep point", name, g.Seeds[0])
		for _, a := range g.Config.Sweep {
			if a.Key == "data.noise" {
				fmt.Fprintf(&b, "; under data.noise σ_M client i's inputs get Gaussian noise of std σ_M·i/(N−1), N = %d (FedTP §IV-C.2)", clients)
			}
		}
		fmt.Fprint(&b, ":\n\n| client |")
		for pi, p := range g.Points {
			if len(cols[pi]) == 0 {
				fmt.Fprintf(&b, " %s (diverged) |", p.Name)
				continue
			}
			fmt.Fprintf(&b, " %s |", p.Name)
		}
		fmt.Fprintf(&b, "\n|%s\n", strings.Repeat("---|", len(g.Points)+1))
		for c := 0; c < clients; c++ {
			fmt.Fprintf(&b, "| %d |", c)
			for pi := range g.Points {
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
