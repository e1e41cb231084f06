// Package chart renders and saves gonum plots whatever data they were given: one point,
// values all equal, huge values or non-finite ones. gonum/plot panics on an axis whose range
// it cannot split into ticks (an axis from 3.8e25 to 3.8e25: its own widening by ±1 is lost
// in the rounding) and returns errors for NaN or infinite points; a figure is a by-product
// of a run, so neither may cost the run. Every figure pfl draws goes through this package.
package chart

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"pfl/engine/internal/atomicfile"
)

// Limit is the largest magnitude a drawn coordinate may have. The tick and layout
// arithmetic of gonum/plot subtracts and scales coordinates: an axis from -1e308 to 1e308
// spans more than a float64 holds. Values beyond it are dropped from figures like NaN (the
// metrics files keep them).
const Limit = 1e300

// Drawable reports whether v can be drawn: finite and within ±Limit.
func Drawable(v float64) bool { return !math.IsNaN(v) && math.Abs(v) <= Limit }

// Points is pts without the points that cannot be drawn (a coordinate NaN, infinite or
// beyond Limit).
func Points(pts plotter.XYs) plotter.XYs {
	var out plotter.XYs
	for _, p := range pts {
		if Drawable(p.X) && Drawable(p.Y) {
			out = append(out, p)
		}
	}
	return out
}

// Values is vs without the values that cannot be drawn.
func Values(vs []float64) []float64 {
	var out []float64
	for _, v := range vs {
		if Drawable(v) {
			out = append(out, v)
		}
	}
	return out
}

// fixAxes gives each axis of p a range gonum can tick: a non-finite end takes the other
// end's value (both: 0 to 1), and a range too narrow to split (a single point, equal
// values, or ends equal once rounded) is widened around its centre by 5% of its magnitude
// (at least ±0.5).
func fixAxes(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		lo, hi := a.Min, a.Max
		switch {
		case !Drawable(lo) && !Drawable(hi):
			lo, hi = 0, 1
		case !Drawable(lo):
			lo = hi
		case !Drawable(hi):
			hi = lo
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		mag := math.Max(math.Abs(lo), math.Abs(hi))
		if hi-lo <= mag*1e-9 {
			pad := math.Max(0.05*mag, 0.5)
			lo, hi = lo-pad, hi+pad
		}
		a.Min, a.Max = lo, hi
	}
}

// Render draws p as an image of w×h in format ("png", "svg"), with its legend where
// PlaceLegend put it (in a corner of the data area by default) and round ticks on axes
// that have gonum's. A panic inside gonum/plot (a case fixAxes does not foresee) is
// returned as an error.
func Render(p *plot.Plot, w, h vg.Length, format string) ([]byte, error) {
	return RenderBeside(p, nil, 0, w, h, format)
}

// Rendered, when set, sees every figure right before it is drawn (its axes fixed): tests
// check titles, labels and axis ranges through it; nothing else sets it.
var Rendered func(p, side *plot.Plot)

// Drawn, when set, is told where Render put each figure's parts: tests check through it
// that a legend lies inside the image and covers no data; nothing else sets it.
var Drawn func(p *plot.Plot, g Geometry)

// Geometry is where Render drew a figure's parts, in points from the bottom left of the
// image: the whole image, the data area (where p.X.Norm and p.Y.Norm map 0 and 1), and the
// legend's box (empty without a legend).
type Geometry struct {
	Canvas, Data, Legend vg.Rectangle
}

// Margins around every figure, so that the title does not touch the top of the image and
// the last tick label not its right edge.
const (
	marginTop   = vg.Length(8)
	marginRight = vg.Length(8)
)

// inner is the part of canvas c a plot is drawn in: c less the margins.
func inner(c draw.Canvas) draw.Canvas {
	c.Max.Y -= marginTop
	c.Max.X -= marginRight
	return c
}

// RenderBeside is Render with a second plot, side (a colour bar), drawn in a strip sideW
// wide on the right of the figure (side nil: none). A legend placed below the axes
// (PlaceLegend) makes the image taller than h by the legend's height.
func RenderBeside(p, side *plot.Plot, sideW, w, h vg.Length, format string) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("cannot draw the figure: %v", r)
		}
	}()
	fixAxes(p)
	roundTicks(p)
	strip := legendStrip(p, w, h)
	total := h
	if placement(p) == Below {
		total += strip
	}
	c, err := draw.NewFormattedCanvas(w, total, format)
	if err != nil {
		return nil, err
	}
	full := draw.New(c)
	dc := inner(full)
	if Rendered != nil {
		Rendered(p, side)
	}
	switch placement(p) {
	case Below:
		dc.Min.Y += strip
	case Outside:
		dc.Max.X -= strip
	}
	if side != nil {
		fixAxes(side)
		roundTicks(side)
		dc.Max.X -= sideW
		// the strip spans the main plot's data area, so the bar lines up with it
		data := p.DataCanvas(dc)
		sc := dc
		sc.Min.X, sc.Max.X = dc.Max.X+vg.Points(6), dc.Max.X+sideW // a gap between the axes and the bar
		sc.Min.Y, sc.Max.Y = data.Min.Y, data.Max.Y
		side.Draw(sc)
	}
	leg := p.Legend
	p.Legend = plot.NewLegend() // drawn below, where placed
	p.Draw(dc)
	p.Legend = leg
	g := Geometry{Canvas: full.Rectangle, Data: p.DataCanvas(dc).Rectangle}
	g.Legend = drawLegend(p, full, dc, g.Data)
	if Drawn != nil {
		Drawn(p, g)
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	if format == "svg" {
		return fontFallbacks(buf.Bytes()), nil
	}
	return buf.Bytes(), nil
}

// fontFallbacks gives the font families an SVG names (gonum's Liberation fonts, which it
// does not embed) the metric-compatible fonts most systems have, then the generic family:
// a browser without Liberation would otherwise fall back to its default font, whose wider
// letters can run text past the box the layout measured.
func fontFallbacks(svg []byte) []byte {
	for _, f := range [][2]string{
		{"font-family:Liberation Serif", "font-family:'Liberation Serif','Times New Roman',Times,serif"},
		{"font-family:Liberation Sans", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif"},
		{"font-family:Liberation Mono", "font-family:'Liberation Mono','Courier New',Courier,monospace"},
	} {
		svg = bytes.ReplaceAll(svg, []byte(f[0]), []byte(f[1]))
	}
	return svg
}

// roundTicks gives each axis of p that has gonum's default ticks RoundTicks instead.
func roundTicks(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if _, ok := a.Tick.Marker.(plot.DefaultTicks); ok {
			a.Tick.Marker = RoundTicks{}
		}
	}
}

// SaveBeside is Save with RenderBeside's side plot.
func SaveBeside(p, side *plot.Plot, sideW, w, h vg.Length, path string) error {
	b, err := RenderBeside(p, side, sideW, w, h, strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), "."))
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, b)
}

// Save draws p into path (its extension, .png or .svg, chooses the format), atomically:
// a figure that cannot be drawn leaves an earlier file at path as it was.
func Save(p *plot.Plot, w, h vg.Length, path string) error {
	b, err := Render(p, w, h, strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), "."))
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, b)
}
