package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
		if ds := g.Runs[0].Config.Data.Dataset; ds != "" {
			title = ds + " · " + title
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
		// translucent: where two bands overlap both stay visible
		poly.Color = chart.Transparent(chart.Color(i), 50)
		poly.LineStyle.Width = 0
		p.Add(poly)
		data = append(data, c.lo, c.hi)
	}
	for i, c := range curves {
		if len(c.mean) == 0 {
			continue
		}
		col := chart.Color(i)
		line, err := plotter.NewLine(c.mean)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		line.Color, line.Width, line.Dashes = col, vg.Points(1.5), chart.Dashes(i)
		p.Add(line)
		data = append(data, c.mean)
		if len(c.mean) < 30 { // few evaluations: mark them (a single one draws no line)
			pts, err := plotter.NewScatter(c.mean)
			if err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			pts.Color, pts.Shape, pts.Radius = col, chart.Shape(i), vg.Points(3)
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
// are placed at 1, 2, … in order and named on the axis. The members' points at one swept
// value are set slightly apart (sweepOffset), so that their error bars do not hide each
// other.
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
	logX := isNum && chart.LogWorthy(xs)
	names := g.MemberNames()
	var data []plotter.XYs
	for mi, name := range names {
		pts, errs := g.sweepPoints(met, second, mi, xs)
		if len(pts) == 0 {
			continue
		}
		for i := range pts {
			pts[i].X = sweepOffset(pts[i].X, xs, mi, len(names), logX)
		}
		drawn, err := g.addSweepMember(p, name, mi, pts, errs)
		if err != nil {
			return fmt.Errorf("plot %s: %w", base, err)
		}
		data = append(data, drawn...)
	}
	// the axis spans every swept value, also those without a point (their runs diverged)
	p.X.Min, p.X.Max = slices.Min(xs), slices.Max(xs)
	if logX {
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

// sweepPoints is member mi's points of a metric against the first swept key (xs, the
// axis' positions of its values) at the second key's value second (-1: any): the mean
// across seeds and ±1 sample std (0 with one seed).
func (g *gridRuns) sweepPoints(met metric, second, mi int, xs []float64) (plotter.XYs, plotter.YErrors) {
	axis := g.Config.Sweep[0]
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
		pts = append(pts, plotter.XY{X: xs[indexOf(axis.Values, pt.Values[0])], Y: m})
		errs = append(errs, struct{ Low, High float64 }{s, s})
	}
	return pts, errs
}

// sweepOffset is x moved for member mi of n so that the members' points at one swept value
// sit side by side, centred on it: 1.5 % of the axis' span apart (of its span in log
// space on a log axis).
func sweepOffset(x float64, xs []float64, mi, n int, logX bool) float64 {
	lo, hi := slices.Min(xs), slices.Max(xs)
	k := float64(mi) - float64(n-1)/2
	if logX {
		return x * math.Pow(hi/lo, 0.015*k)
	}
	span := hi - lo
	if !(span > 0) {
		span = 1
	}
	return x + 0.015*k*span
}

// addSweepMember adds member mi's line, markers and, with several seeds, error bars to p,
// names it in the legend and returns what it drew (the bars' ends too).
func (g *gridRuns) addSweepMember(p *plot.Plot, name string, mi int, pts plotter.XYs, errs plotter.YErrors) ([]plotter.XYs, error) {
	col := chart.Color(mi)
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	line.Color, line.Dashes, line.Width = col, chart.Dashes(mi), vg.Points(1.5)
	points.Color, points.Shape, points.Radius = col, chart.Shape(mi), vg.Points(3)
	p.Add(line, points)
	p.Legend.Add(name, line, points)
	data := []plotter.XYs{pts}
	if len(g.Config.Seeds) <= 1 {
		return data, nil
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	bars.Color, bars.Width = col, vg.Points(1.2)
	p.Add(bars)
	var lo, hi plotter.XYs // the bars' ends are data the legend must not hide
	for i, q := range pts {
		lo = append(lo, plotter.XY{X: q.X, Y: q.Y - errs[i].Low})
		hi = append(hi, plotter.XY{X: q.X, Y: q.Y + errs[i].High})
	}
	return append(data, chart.Points(lo), chart.Points(hi)), nil
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
// per client and a dashed line through the clients' mean, as FedTP's Fig. 10(b), into
// clients-<member>.{png,svg}.
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
		var cols [][][]float64
		for pi := range g.Points {
			if cols = append(cols, g.perClient(pi, mi)); cols[pi] == nil {
				return nil // a run without metrics: the tables say so
			}
		}
		p, data, err := clientSweepFigure(fmt.Sprintf("%s: final accuracy of every client (seed %d)", name, g.Seeds[0]), axis.Key, xs, cols)
		if err != nil {
			return fmt.Errorf("plot clients-%s: %w", name, err)
		}
		finish(p, 7*vg.Inch, 4*vg.Inch, data...)
		for _, ext := range []string{".png", ".svg"} {
			if err := chart.Save(p, 7*vg.Inch, 4*vg.Inch, filepath.Join(g.Dir, "clients-"+config.FolderSafe(name)+ext)); err != nil {
				return err
			}
		}
	}
	return nil
}

// clientSweepFigure is the figure of clientPlots for one member: cols[point][client] are
// the client's accuracies (%) over the seeds at each swept value xs; it returns the figure
// and what it drew. Clients of equal accuracy at one value are set side by side.
func clientSweepFigure(title, key string, xs []float64, cols [][][]float64) (*plot.Plot, []plotter.XYs, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = sweepLabel(key), "accuracy, %"
	logX := chart.LogWorthy(xs)
	var mean, all plotter.XYs
	for pi, clients := range cols {
		var sum float64
		var ys []float64
		for _, seeds := range clients {
			m, _ := stats(seeds)
			ys = append(ys, m)
			sum += m
		}
		// a client without test samples has a NaN accuracy: no point, as in the tables
		for i, y := range chart.Values(ys) {
			x := xs[pi]
			if k := tiesBefore(chart.Values(ys), i, 0.5); k > 0 {
				x = sweepOffset(x, xs, k, 1, logX) // beside the clients it would hide
			}
			all = append(all, plotter.XY{X: x, Y: y})
		}
		mean = append(mean, plotter.XY{X: xs[pi], Y: sum / float64(len(clients))})
	}
	var data []plotter.XYs
	if len(all) > 0 {
		sc, err := plotter.NewScatter(all)
		if err != nil {
			return nil, nil, err
		}
		sc.Color, sc.Shape, sc.Radius = chart.Color(0), draw.RingGlyph{}, vg.Points(3)
		p.Add(sc)
		p.Legend.Add("one client", sc)
		for _, q := range all {
			data = append(data, plotter.XYs{q}) // separate markers, not a line
		}
	}
	if mean = chart.Points(mean); len(mean) > 0 {
		line, points, err := plotter.NewLinePoints(mean)
		if err != nil {
			return nil, nil, err
		}
		line.Color, line.Dashes, line.Width = chart.Color(1), chart.Dashes(1), vg.Points(1.5)
		points.Color, points.Shape, points.Radius = chart.Color(1), chart.Shape(1), vg.Points(3)
		p.Add(line, points)
		p.Legend.Add("mean over clients", line, points)
		data = append(data, mean)
	}
	p.X.Min, p.X.Max = slices.Min(xs), slices.Max(xs) // every swept value, with a point or not
	if logX {
		chart.LogX(p)
	}
	return p, data, nil
}

// tiesBefore is how many of ys[:i] lie within tol of ys[i]: the points drawn before it at
// the same place.
func tiesBefore(ys []float64, i int, tol float64) int {
	n := 0
	for _, y := range ys[:i] {
		if math.Abs(y-ys[i]) < tol {
			n++
		}
	}
	return n
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
