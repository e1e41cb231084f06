package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// RunFigures draws a run's convergence curves (accuracy and loss against the round) and its
// clients' final accuracies (novel clients left out) into dir, each as PNG and SVG; title
// names the run in each figure's title (RunTitle).
func RunFigures(dir, title string, h []fl.RoundMetrics, novel []int) error {
	var acc, mean, loss plotter.XYs
	var last *fl.EvalResult
	for _, m := range h {
		loss = append(loss, plotter.XY{X: float64(m.Round + 1), Y: m.TrainLoss})
		if m.Eval != nil {
			acc = append(acc, plotter.XY{X: float64(m.Round + 1), Y: 100 * m.Eval.Micro})
			mean = append(mean, plotter.XY{X: float64(m.Round + 1), Y: 100 * m.Eval.Mean})
			last = m.Eval
		}
	}
	if err := save(dir, "accuracy", title+": test accuracy", "round", "accuracy, %", "accuracy (all samples)", acc, "mean over clients", mean); err != nil {
		return err
	}
	if err := save(dir, "loss", title+": training loss", "round", "loss", "mean client loss", loss); err != nil {
		return err
	}
	if last == nil {
		return nil
	}
	var sorted []float64 // the clients that trained
	for c, a := range last.Accuracy {
		if !slices.Contains(novel, c) {
			sorted = append(sorted, a)
		}
	}
	slices.Sort(sorted)
	return clientsFigure(dir, title, sorted)
}

// RunTitle names a run in its figures' titles: its algorithm (after the suite member's
// name where that differs), its dataset, its sweep point and its seed, e.g.
// "fedtp · fashion-mnist · data.alpha=0.1 · seed 1". sweep is the run's point of a sweep
// (nil: none). A config that names no algorithm is named by its name.
func RunTitle(cfg config.Config, member string, sweep []config.SweepValue) string {
	algo := cfg.Algorithm.Name
	if algo == "" {
		algo = cfg.Name
	}
	if member != "" && member != algo {
		algo = member + " (" + algo + ")"
	}
	parts := []string{algo}
	if cfg.Data.Dataset != "" {
		parts = append(parts, cfg.Data.Dataset)
	}
	for _, v := range sweep {
		parts = append(parts, v.Key+"="+v.Value)
	}
	parts = append(parts, fmt.Sprintf("seed %d", cfg.Seed))
	return strings.Join(parts, " · ")
}

// clientsFigure draws each client's final accuracy (fractions, sorted ascending) as a
// point at its rank, with the mean over clients as a dashed line, into
// dir/clients.{png,svg}: the points are separate clients, so no line joins them.
func clientsFigure(dir, title string, sorted []float64) error {
	var per plotter.XYs
	var sum float64
	for i, a := range sorted {
		per = append(per, plotter.XY{X: float64(i + 1), Y: 100 * a})
	}
	if per = chart.Points(per); len(per) == 0 {
		return nil // a client without test samples has no accuracy to draw
	}
	for _, q := range per {
		sum += q.Y
	}
	mean := sum / float64(len(per))
	p := plot.New()
	p.Title.Text = title + ": final accuracy of each client"
	p.X.Label.Text, p.Y.Label.Text = "client, ranked by final accuracy", "accuracy, %"
	p.X.Tick.Marker = chart.IntTicks{}
	sc, err := plotter.NewScatter(per)
	if err != nil {
		return fmt.Errorf("plot clients: %w", err)
	}
	sc.Color, sc.Shape, sc.Radius = chart.Color(0), chart.Shape(0), vg.Points(3)
	line, err := plotter.NewLine(plotter.XYs{{X: per[0].X, Y: mean}, {X: per[len(per)-1].X, Y: mean}})
	if err != nil {
		return fmt.Errorf("plot clients: %w", err)
	}
	line.Color, line.Dashes, line.Width = chart.Color(1), chart.Dashes(1), vg.Points(1.5)
	p.Add(line, sc)
	p.Legend.Add(fmt.Sprintf("one client (%d that train)", len(per)), sc)
	p.Legend.Add(fmt.Sprintf("mean over clients, %.1f %%", mean), line)
	data := []plotter.XYs{line.XYs}
	for _, q := range per {
		data = append(data, plotter.XYs{q}) // separate markers, not a line
	}
	return saveFigure(p, dir, "clients", data...)
}

// save draws named lines (label, points, label, points, ...) into dir/base.{png,svg}.
func save(dir, base, title, x, y string, lines ...any) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.X.Tick.Marker = chart.IntTicks{} // rounds, epochs, clients: no tick at 2.5
	curves, err := chart.AddLines(p, lines...)
	if err != nil {
		return fmt.Errorf("plot %s: %w", base, err)
	}
	if len(curves) == 0 {
		return nil
	}
	return saveFigure(p, dir, base, curves...)
}

// saveFigure pads p, places its legend off curves and writes it as dir/base.{png,svg}, a
// 7×4 inch figure.
func saveFigure(p *plot.Plot, dir, base string, curves ...plotter.XYs) error {
	finish(p, 7*vg.Inch, 4*vg.Inch, curves...)
	for _, ext := range []string{"png", "svg"} {
		if err := chart.Save(p, 7*vg.Inch, 4*vg.Inch, filepath.Join(dir, base+"."+ext)); err != nil {
			return err
		}
	}
	return nil
}

// Compare draws the test accuracy of several runs (their metrics.jsonl) on one figure,
// written to path (its extension, .png or .svg, chooses the format), each curve named by
// its directory's base name.
func Compare(path string, dirs []string) error {
	labels := make([]string, len(dirs))
	for i, dir := range dirs {
		labels[i] = filepath.Base(dir)
	}
	return CompareLabelled(path, dirs, labels)
}

// CompareLabelled is Compare with each curve named by labels (the runs of a grid share
// base names: seed-1). The title names the runs' dataset and seed where they share them.
func CompareLabelled(path string, dirs, labels []string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("plot: no run directories")
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = sharedSetting(dirs)+"test accuracy (all test samples)", "round", "accuracy, %"
	p.X.Tick.Marker = chart.IntTicks{}
	var args []any
	for i, dir := range dirs {
		label, div := labels[i], rundir.DivergedAt(dir)
		if div != 0 {
			label += fmt.Sprintf(" (diverged at round %d)", div)
		}
		pts, err := accuracyCurve(dir)
		if err != nil && div != 0 {
			continue // it diverged before its first evaluation: nothing to draw
		}
		if err != nil {
			return err
		}
		args = append(args, label, pts)
	}
	curves, err := chart.AddLines(p, args...)
	if err != nil {
		return err
	}
	finish(p, 7*vg.Inch, 4*vg.Inch, curves...)
	return chart.Save(p, 7*vg.Inch, 4*vg.Inch, path)
}

// sharedSetting is "<dataset> · seed <s>: " when every run in dirs has that dataset and
// seed (their config.json), "<dataset>: " when they share the dataset only, else "".
func sharedSetting(dirs []string) string {
	datasets, seeds := map[string]bool{}, map[uint64]bool{}
	for _, d := range dirs {
		cfg, err := rundir.LoadConfig(d)
		if err != nil || cfg.Data.Dataset == "" {
			return ""
		}
		datasets[cfg.Data.Dataset], seeds[cfg.Seed] = true, true
	}
	if len(datasets) != 1 {
		return ""
	}
	var ds string
	var seed uint64
	for d := range datasets {
		ds = d
	}
	for s := range seeds {
		seed = s
	}
	if len(seeds) == 1 {
		return fmt.Sprintf("%s · seed %d: ", ds, seed)
	}
	return ds + ": "
}

// finish pads p's axes so no marker sits on the frame and puts its legend where it covers
// none of curves (the figure's data), for a figure of w × h.
func finish(p *plot.Plot, w, h vg.Length, curves ...plotter.XYs) {
	chart.Pad(p, 0.04)
	chart.PlaceLegend(p, w, h, curves...)
}

// accuracyCurve reads a run's evaluated rounds: accuracy in percent by 1-based round, as
// every figure and table shows them.
func accuracyCurve(dir string) (plotter.XYs, error) {
	path := filepath.Join(dir, rundir.MetricsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	lines, err := rundir.ParseMetrics(b)
	if err != nil {
		return nil, fmt.Errorf("plot: %s %w", path, err)
	}
	var pts plotter.XYs
	for _, m := range lines {
		if m.Micro != nil {
			pts = append(pts, plotter.XY{X: float64(m.Round), Y: 100 * float64(*m.Micro)})
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("plot: %s has no evaluated round", dir)
	}
	return pts, nil
}
