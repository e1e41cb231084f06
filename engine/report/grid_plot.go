package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"pfl/engine/config"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// plots writes the grid's figures: at every point (the grid's own directory without a
// sweep) the accuracy curves of its members, a mean line across seeds with a min–max
// band; with a sweep, each metric against the first swept key (one line per member, error
// bars ±1 sample std across seeds), one figure per value of a second key. A grid of three
// keys or more gets its tables only.
func (g *gridRuns) plots() error {
	for pi, p := range g.Points {
		dir := filepath.Join(g.Dir, p.Name)
		if len(g.Members) == 0 && len(g.Config.Seeds) == 0 {
			continue // the point is the run itself, which drew its own curves
		}
		var curves []bandCurve
		for mi, name := range g.MemberNames() {
			var runs []plotter.XYs
			for _, l := range g.Runs {
				if l.Point == pi && l.Member == mi && rundir.DivergedAt(l.Dir()) == 0 {
					pts, err := accuracyCurve(l.Dir())
					if err != nil {
						return err
					}
					runs = append(runs, chart.Points(pts))
				}
			}
			// the band is over the seeds that did not diverge; the legend says how many did
			curves = append(curves, band(flagged(name, g.flags(pi, mi)), runs))
		}
		title := "test accuracy"
		if len(g.Config.Seeds) > 1 {
			title += fmt.Sprintf(": mean over %d seeds, band min–max", len(g.Seeds))
		}
		if p.Name != "" {
			title = p.Name + ": " + title
		}
		for _, ext := range []string{".png", ".svg"} {
			if err := drawBands(filepath.Join(dir, "accuracy"+ext), title, curves); err != nil {
				return err
			}
		}
	}
	if len(g.Config.Sweep) == 0 || len(g.Config.Sweep) > 2 {
		return nil
	}
	for _, met := range gridMetrics {
		if len(g.Config.Sweep) == 1 {
			if err := g.sweepPlot(met, -1, "sweep-"+met.key); err != nil {
				return err
			}
			continue
		}
		for vi, v := range g.Config.Sweep[1].Values {
			if err := g.sweepPlot(met, vi, "sweep-"+met.key+"-"+g.Config.Sweep[1].Key+"="+config.FolderSafe(v)); err != nil {
				return err
			}
		}
	}
	return nil
}

// bandCurve is one member's accuracy across seeds: the mean and the min–max at each
// evaluated round all seeds reached.
type bandCurve struct {
	name         string
	mean, lo, hi plotter.XYs
	seeds        int
}

// band reduces the seeds' curves of one member to a mean line and a min–max band over the
// evaluated rounds every seed has (seeds of one config evaluate the same rounds).
func band(name string, runs []plotter.XYs) bandCurve {
	c := bandCurve{name: name, seeds: len(runs)}
	if len(runs) == 0 {
		return c
	}
	for _, p := range runs[0] {
		sum, lo, hi, n := 0.0, math.Inf(1), math.Inf(-1), 0
		for _, r := range runs {
			for _, q := range r {
				if q.X == p.X {
					sum, lo, hi, n = sum+q.Y, math.Min(lo, q.Y), math.Max(hi, q.Y), n+1
					break
				}
			}
		}
		// a point the figure cannot draw (a sum beyond float64) is left out of all three
		if mean := sum / float64(n); n == len(runs) && chart.Drawable(mean) && chart.Drawable(lo) && chart.Drawable(hi) {
			c.mean = append(c.mean, plotter.XY{X: p.X, Y: mean})
			c.lo = append(c.lo, plotter.XY{X: p.X, Y: lo})
			c.hi = append(c.hi, plotter.XY{X: p.X, Y: hi})
		}
	}
	return c
}

// drawBands draws each curve's band (translucent, when it has more than one seed) and
// mean line into path (.png or .svg).
func drawBands(path, title string, curves []bandCurve) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "round", "accuracy, %"
	p.X.Tick.Marker = chart.IntTicks{}
	var data []plotter.XYs
	// every band first, every line on top: a later member's band must not veil an
	// earlier member's line
	for i, c := range curves {
		if len(c.mean) == 0 || c.seeds <= 1 {
			continue
		}
		var ring plotter.XYs
		ring = append(ring, c.lo...)
		for j := len(c.hi) - 1; j >= 0; j-- {
			ring = append(ring, c.hi[j])
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		r, gr, b, _ := plotutil.Color(i).RGBA()
		// translucent: where two bands overlap both stay visible
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(gr >> 8), B: uint8(b >> 8), A: 50}
		poly.LineStyle.Width = 0
		p.Add(poly)
		data = append(data, c.lo, c.hi)
	}
	for i, c := range curves {
		if len(c.mean) == 0 {
			continue
		}
		col := plotutil.Color(i)
		line, err := plotter.NewLine(c.mean)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		line.Color, line.Width, line.Dashes = col, vg.Points(1.5), plotutil.Dashes(i)
		p.Add(line)
		data = append(data, c.mean)
		if len(c.mean) < 30 { // few evaluations: mark them (a single one draws no line)
			pts, err := plotter.NewScatter(c.mean)
			if err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			pts.Color, pts.Shape = col, plotutil.Shape(i)
			p.Add(pts)
			p.Legend.Add(c.name, line, pts)
			continue
		}
		p.Legend.Add(c.name, line)
	}
	finish(p, 7*vg.Inch, 4*vg.Inch, data...)
	return chart.Save(p, 7*vg.Inch, 4*vg.Inch, path)
}

// sweepPlot draws a metric against the first swept key, one line per member (the mean
// across seeds, error bars ±1 sample std with several seeds), at the second key's value
// second (-1: a one-key sweep), into g.Dir/base.{png,svg}. Values that are not all numbers
// are placed at 1, 2, … in order and named on the axis.
func (g *gridRuns) sweepPlot(met metric, second int, base string) error {
	axis := g.Config.Sweep[0]
	xs, isNum := numeric(axis.Values)
	if !isNum {
		xs = nil
		for i := range axis.Values {
			xs = append(xs, float64(i+1))
		}
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = met.title, sweepLabel(axis.Key), "accuracy, %"
	if second >= 0 {
		p.Title.Text += fmt.Sprintf(" (%s = %s)", g.Config.Sweep[1].Key, g.Config.Sweep[1].Values[second])
	}
	if !isNum {
		var ticks []plot.Tick
		for i, v := range axis.Values {
			ticks = append(ticks, plot.Tick{Value: xs[i], Label: v})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	var data []plotter.XYs
	for mi, name := range g.MemberNames() {
		var pts plotter.XYs
		var errs plotter.YErrors
		for pi, pt := range g.Points {
			if second >= 0 && pt.Values[1] != g.Config.Sweep[1].Values[second] {
				continue
			}
			vals := g.values(pi, mi, met.of)
			if len(vals) == 0 {
				continue
			}
			m, s := stats(vals)
			if !chart.Drawable(m) {
				continue // a metric no run could measure (NaN) has no point; the tables say so
			}
			if !chart.Drawable(s) {
				s = 0
			}
			x := xs[indexOf(axis.Values, pt.Values[0])]
			pts = append(pts, plotter.XY{X: x, Y: m})
			errs = append(errs, struct{ Low, High float64 }{s, s})
		}
		if len(pts) == 0 {
			continue
		}
		col := plotutil.Color(mi)
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", base, err)
		}
		line.Color, points.Color, points.Shape = col, col, plotutil.Shape(mi)
		p.Add(line, points)
		p.Legend.Add(name, line, points)
		data = append(data, pts)
		if len(g.Config.Seeds) > 1 {
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{pts, errs})
			if err != nil {
				return fmt.Errorf("plot %s: %w", base, err)
			}
			bars.Color = col
			p.Add(bars)
			var lo, hi plotter.XYs // the bars' ends are data the legend must not hide
			for i, q := range pts {
				lo = append(lo, plotter.XY{X: q.X, Y: q.Y - errs[i].Low})
				hi = append(hi, plotter.XY{X: q.X, Y: q.Y + errs[i].High})
			}
			data = append(data, chart.Points(lo), chart.Points(hi))
		}
	}
	// the axis spans every swept value, also those without a point (their runs diverged)
	p.X.Min, p.X.Max = slices.Min(xs), slices.Max(xs)
	if isNum && chart.LogWorthy(xs) {
		chart.LogX(p) // α and learning rates are swept by factors: equal ratios, equal steps
	}
	finish(p, 7*vg.Inch, 4*vg.Inch, data...)
	for _, ext := range []string{".png", ".svg"} {
		if err := chart.Save(p, 7*vg.Inch, 4*vg.Inch, filepath.Join(g.Dir, base+ext)); err != nil {
			return err
		}
	}
	return nil
}

func indexOf(vs []string, v string) int {
	for i, w := range vs {
		if w == v {
			return i
		}
	}
	return -1
}

// clientPlots draws, for a one-key sweep over at most maxClientTable clients, each
// member's final per-client accuracy against the swept value under the first seed: a point
// per client and a dotted line through the clients' mean, as FedTP's Fig. 10(b),
// into clients-<member>.{png,svg}.
func (g *gridRuns) clientPlots() error {
	if len(g.Config.Sweep) != 1 || g.Runs[0].Config.Data.Clients > maxClientTable {
		return nil
	}
	axis := g.Config.Sweep[0]
	xs, isNum := numeric(axis.Values)
	if !isNum {
		return nil
	}
	for mi, name := range g.MemberNames() {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: final accuracy of every client (seed %d)", name, g.Seeds[0])
		p.X.Label.Text, p.Y.Label.Text = sweepLabel(axis.Key), "accuracy, %"
		var mean, all plotter.XYs
		for pi := range g.Points {
			cols := g.perClient(pi, mi)
			if cols == nil {
				return nil // a run without metrics: the tables say so
			}
			var sum float64
			var pts plotter.XYs
			for _, seeds := range cols {
				m, _ := stats(seeds)
				pts = append(pts, plotter.XY{X: xs[pi], Y: m})
				sum += m
			}
			// a client without test samples has a NaN accuracy: no point, as in the tables
			if pts = chart.Points(pts); len(pts) > 0 {
				sc, err := plotter.NewScatter(pts)
				if err != nil {
					return fmt.Errorf("plot clients-%s: %w", name, err)
				}
				sc.Color, sc.Shape = plotutil.Color(pi), plotutil.Shape(0)
				p.Add(sc)
				all = append(all, pts...)
			}
			mean = append(mean, plotter.XY{X: xs[pi], Y: sum / float64(len(cols))})
		}
		if mean = chart.Points(mean); len(mean) > 0 {
			line, err := plotter.NewLine(mean)
			if err != nil {
				return fmt.Errorf("plot clients-%s: %w", name, err)
			}
			line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(line)
			p.Legend.Add("mean over clients", line)
		}
		p.X.Min, p.X.Max = slices.Min(xs), slices.Max(xs) // every swept value, with a point or not
		if chart.LogWorthy(xs) {
			chart.LogX(p)
		}
		var data []plotter.XYs
		for _, q := range all {
			data = append(data, plotter.XYs{q}) // separate markers, not a line
		}
		finish(p, 7*vg.Inch, 4*vg.Inch, append(data, mean)...)
		for _, ext := range []string{".png", ".svg"} {
			if err := chart.Save(p, 7*vg.Inch, 4*vg.Inch, filepath.Join(g.Dir, "clients-"+config.FolderSafe(name)+ext)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepLabel is a swept key as an axis label, with the unit where the key has one.
func sweepLabel(key string) string {
	switch key {
	case "data.alpha":
		return "data.alpha (Dirichlet concentration α)"
	case "train.lr":
		return key + " (learning rate)"
	case "train.local_epochs":
		return key + " (epochs)"
	case "train.participation":
		return key + " (fraction of clients per round)"
	}
	return key
}
