package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"pfl/engine/fl"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// RunFigures draws a run's convergence curves (accuracy and loss against the round) and its
// clients' final accuracies (novel clients left out) into dir, each as PNG and SVG; name
// titles them.
func RunFigures(dir, name string, h []fl.RoundMetrics, novel []int) error {
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
	if err := save(dir, "accuracy", name+": test accuracy", "round", "accuracy, %", "accuracy (all samples)", acc, "mean over clients", mean); err != nil {
		return err
	}
	if err := save(dir, "loss", name+": training loss", "round", "loss", "mean client loss", loss); err != nil {
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
	var per plotter.XYs
	for i, a := range sorted {
		per = append(per, plotter.XY{X: float64(i), Y: 100 * a})
	}
	return save(dir, "clients", name+": final accuracy per client (sorted)", "client, sorted by final accuracy", "accuracy, %", "client", per)
}

// save draws named lines (label, points, label, points, ...) into dir/base.{png,svg}.
func save(dir, base, title, x, y string, lines ...any) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.X.Tick.Marker = chart.IntTicks{} // rounds, epochs, clients: no tick at 2.5
	var args []any
	var curves []plotter.XYs
	for i := 0; i+1 < len(lines); i += 2 {
		// a diverged run's NaN or infinite loss cannot be drawn; the metrics files keep it
		if pts := chart.Points(lines[i+1].(plotter.XYs)); len(pts) > 0 {
			args = append(args, lines[i], pts)
			curves = append(curves, pts)
		}
	}
	if len(args) == 0 {
		return nil
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("plot %s: %w", base, err)
	}
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
// base names: seed-1).
func CompareLabelled(path string, dirs, labels []string) error {
	if len(dirs) == 0 {
		return fmt.Errorf("plot: no run directories")
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "test accuracy (all test samples)", "round", "accuracy, %"
	p.X.Tick.Marker = chart.IntTicks{}
	var args []any
	var curves []plotter.XYs
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
		args = append(args, label, chart.Points(pts))
		curves = append(curves, chart.Points(pts))
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	finish(p, 7*vg.Inch, 4*vg.Inch, curves...)
	return chart.Save(p, 7*vg.Inch, 4*vg.Inch, path)
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
