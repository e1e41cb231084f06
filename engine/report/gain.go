package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"pfl/engine/fl"
	"pfl/engine/internal/atomicfile"
	"pfl/engine/internal/chart"
)

// gainDensity writes FedPerfix's Fig. 3 for a suite with a "local" member: for every
// other member, its clients' accuracy gain over Local (the last evaluation, clients that
// train) as dir/gain_density.{png,svg} — a kernel density of the gains from stripClients
// clients on, below that every client as a point (a strip plot) — and the gains
// themselves as dir/gains.csv (client, member, gain in accuracy points). A suite without a
// local member, or whose runs have no evaluation, writes nothing.
func gainDensity(dir string, runs []Run) error {
	var base []float64
	for _, r := range runs {
		if r.Summary.Diverged != 0 {
			continue // a diverged run's last evaluation is of an earlier round than the others'
		}
		if fl.Keeps(r.Summary.Name) == fl.KeepEverything { // the local member
			base = r.Final
		}
	}
	if base == nil {
		return nil
	}
	var csv strings.Builder
	csv.WriteString("client,member,gain\n")
	var rows []stripRow
	for _, r := range runs {
		acc := r.Final
		if fl.Keeps(r.Summary.Name) == fl.KeepEverything || len(acc) != len(base) || r.Summary.Diverged != 0 {
			continue
		}
		var gains []float64
		for c := range acc {
			if slices.Contains(r.Novel, c) {
				continue
			}
			g := 100 * (acc[c] - base[c])
			gains = append(gains, g)
			fmt.Fprintf(&csv, "%d,%s,%.4f\n", c, r.Summary.Name, g)
		}
		rows = append(rows, stripRow{r.Summary.Name, gains}) // the CSV keeps a NaN gain
	}
	if len(rows) == 0 {
		return nil
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, "gains.csv"), []byte(csv.String())); err != nil {
		return err
	}
	const title, x = "per-client accuracy gain over Local (last evaluation)", "accuracy gain over Local, percentage points"
	p, err := perClientFigure(title, x, true, rows, -100, 100)
	if err != nil || p == nil {
		return err
	}
	for _, ext := range []string{"png", "svg"} {
		if err := chart.Save(p, 7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "gain_density."+ext)); err != nil {
			return err
		}
	}
	return nil
}

// perClientFigure draws members' per-client values (rows; lo and hi bound what the values
// can be): a strip plot under stripClients clients, else a kernel density per member. With
// zero, a line at 0 marks "no gain". Nil when nothing can be drawn.
func perClientFigure(title, x string, zero bool, rows []stripRow, lo, hi float64) (*plot.Plot, error) {
	n := 0
	for _, r := range rows {
		n = max(n, len(r.values))
	}
	if n < stripClients {
		return stripFigure(title, x, zero, rows)
	}
	var lines []any
	for _, r := range rows {
		lines = append(lines, r.name, densityCurve(chart.Values(r.values), 200, lo, hi))
	}
	return densityFigure(title, x, zero, lines...)
}

// densityFigure draws density curves (label, points, …) as lines without markers, with a
// vertical line at 0 where zero marks "no gain" (nil when no curve can be drawn), its
// legend placed for a 7×4 inch figure.
func densityFigure(title, x string, zero bool, lines ...any) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, "density, 1/percentage point"
	var curves []plotter.XYs
	for i := 0; i+1 < len(lines); i += 2 {
		pts := chart.Points(lines[i+1].(plotter.XYs))
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", title, err)
		}
		n := len(curves)
		l.Color, l.Dashes, l.Width = chart.Color(n), chart.Dashes(n), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(lines[i].(string), l)
		curves = append(curves, pts)
	}
	if len(curves) == 0 {
		return nil, nil
	}
	p.Y.Min = 0 // a density is never negative: the axis starts at 0
	chart.Pad(p, 0.03)
	p.Y.Min = 0
	if zero && p.X.Min < 0 && p.X.Max > 0 {
		z, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.Y.Min}, {X: 0, Y: p.Y.Max}})
		if err == nil {
			z.Color, z.Width = color.Gray{Y: 100}, vg.Points(0.75)
			z.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			p.Add(z)
			curves = append(curves, z.XYs)
		}
	}
	chart.PlaceLegend(p, 7*vg.Inch, 4*vg.Inch, curves...)
	return p, nil
}

// densityCurve is a Gaussian kernel density estimate of xs at points evenly spaced over
// [min − 3h, max + 3h] clipped to [lo, hi], the values' possible range (an accuracy in
// [0, 100], a gain in percentage points in [−100, 100]), with Silverman's bandwidth h = 0.9·min(σ, IQR/1.34)·n^(−1/5)
// (the rule of thumb seaborn's and scipy's plots of such densities default to); xs
// all equal gets h = 1 point.
//
// The estimate is bounded by reflection: each kernel's mass that would fall beyond a
// bound is folded back inside (a mirror sample at 2·lo − x and 2·hi − x), so the curve
// still integrates to 1 over [lo, hi] rather than leaking past 100 % or dipping at a bound
// where many clients sit (clients at 100 % accuracy are common). Clipping the grid alone
// would lose that mass.
func densityCurve(xs []float64, points int, lo, hi float64) plotter.XYs {
	n := float64(len(xs))
	if n == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var mean, ss float64
	for _, x := range s {
		mean += x / n
	}
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	sigma := math.Sqrt(ss / math.Max(n-1, 1))
	q := func(p float64) float64 { // linear interpolation between order statistics
		i := p * (n - 1)
		lo := int(math.Floor(i))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (i-float64(lo))*(s[hi]-s[lo])
	}
	spread := sigma
	if iqr := (q(0.75) - q(0.25)) / 1.34; iqr > 0 {
		spread = math.Min(sigma, iqr)
	}
	h := 0.9 * spread * math.Pow(n, -0.2)
	if !(h > 1e-9*math.Max(math.Abs(mean), 1)) { // equal values, bar rounding in the mean
		h = 1
	}
	from, to := math.Max(s[0]-3*h, lo), math.Min(s[len(s)-1]+3*h, hi)
	if !(from < to) { // values outside the bounds (or all on one): the bare estimate
		from, to, lo, hi = s[0]-3*h, s[len(s)-1]+3*h, math.Inf(-1), math.Inf(1)
	}
	kernel := func(x, v float64) float64 { z := (x - v) / h; return math.Exp(-z * z / 2) }
	out := make(plotter.XYs, points)
	for i := range out {
		x := from + (to-from)*float64(i)/float64(points-1)
		var d float64
		for _, v := range s {
			d += kernel(x, v)
			if !math.IsInf(lo, 0) {
				d += kernel(x, 2*lo-v) + kernel(x, 2*hi-v)
			}
		}
		out[i] = plotter.XY{X: x, Y: d / (n * h * math.Sqrt(2*math.Pi))}
	}
	return out
}
