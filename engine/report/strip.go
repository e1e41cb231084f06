package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"pfl/engine/internal/chart"
)

// stripClients is the number of clients under which a figure of per-client values draws
// every client as a point (a strip plot) instead of a kernel density: a density of a few
// values is mostly the kernel's shape, with spikes where two values coincide.
const stripClients = 30

// stripRow is one row of a strip plot: a member's name and its per-client values.
type stripRow struct {
	name   string
	values []float64
}

// stripFigure is a strip plot: a row per member, the first at the top, each client a point
// at its value (clients of nearly equal value set a little above and below one another),
// a vertical bar at each row's median, and with zero a dashed line at 0 (no gain); nil
// when no value can be drawn.
func stripFigure(title, x string, zero bool, rows []stripRow) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text = title, x
	p.Y.Label.Text = "member (a point per client, a bar at the median)"
	var ticks []plot.Tick
	drawn := false
	for i, r := range rows {
		y := float64(len(rows) - 1 - i)
		ticks = append(ticks, plot.Tick{Value: y, Label: r.name})
		vs := chart.Values(r.values)
		if len(vs) == 0 {
			continue
		}
		drawn = true
		if err := addStripRow(p, y, vs, i); err != nil {
			return nil, fmt.Errorf("plot %s: %w", title, err)
		}
	}
	if !drawn {
		return nil, nil
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
	chart.Pad(p, 0.03)
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
	if zero && p.X.Min <= 0 && p.X.Max >= 0 {
		z, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.Y.Min}, {X: 0, Y: p.Y.Max}})
		if err != nil {
			return nil, err
		}
		z.Color, z.Width, z.Dashes = color.Gray{Y: 100}, vg.Points(0.75), []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(z)
	}
	return p, nil
}

// addStripRow draws one row's values at height y in series i's colour and marker, with its
// median bar.
func addStripRow(p *plot.Plot, y float64, vs []float64, i int) error {
	lo, hi := slices.Min(vs), slices.Max(vs)
	tol := math.Max(0.01*(hi-lo), 1e-9*math.Max(math.Abs(lo), math.Abs(hi)))
	var pts plotter.XYs
	for j, v := range vs {
		k := tiesBefore(vs, j, tol)
		// 0, +1, −1, +2, −2, … steps of 0.08 up and down the row, at most ±0.32
		off := 0.08 * float64(min((k+1)/2, 4))
		if k%2 == 0 {
			off = -off
		}
		pts = append(pts, plotter.XY{X: v, Y: y + off})
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.Color, sc.Shape, sc.Radius = chart.Color(i), chart.Shape(i), vg.Points(3.5)
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	bar, err := plotter.NewLine(plotter.XYs{{X: med, Y: y - 0.4}, {X: med, Y: y + 0.4}})
	if err != nil {
		return err
	}
	bar.Color, bar.Width = color.Black, vg.Points(2)
	p.Add(bar, sc)
	return nil
}
