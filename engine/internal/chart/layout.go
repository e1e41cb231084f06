package chart

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Corner is where a legend sits: a corner of the data area, or beside the axes.
type Corner int

// The four corners, in the order FreeCorner tries them (top right first, where readers
// look for a legend; bottom left last), then the two places outside the axes, inside the
// image: right of the axes and below them.
const (
	TopRight Corner = iota
	TopLeft
	BottomRight
	BottomLeft
	Outside // right of the axes, top aligned: for a long list of entries
	Below   // under the axes, across the image: the image grows by the legend's height
)

// legendMargin is the gap, as a fraction of the data area, kept between a legend and the
// nearest data: a marker's radius and a line's width stick out of their coordinates.
const legendMargin = 0.03

// FreeCorner is the first corner (TopRight, TopLeft, BottomRight, BottomLeft) in which a
// box of fw × fh (fractions of the data area's width and height) holds none of the
// curves, or Outside. Curves are in data-area fractions (0 to 1 from the bottom left);
// each is a polyline, so the segments between its points count as data too, and a curve of
// one point is a marker.
func FreeCorner(fw, fh float64, curves ...plotter.XYs) Corner {
	if fw >= 0.5 || fh >= 0.9 {
		return Outside // a legend that large hides what it names wherever it goes
	}
	for _, c := range []Corner{TopRight, TopLeft, BottomRight, BottomLeft} {
		if cornerFree(c, fw+legendMargin, fh+legendMargin, curves) {
			return c
		}
	}
	return Outside
}

// Box is the rectangle (fractions of the data area) a legend of fw × fh covers in c.
func (c Corner) Box(fw, fh float64) vg.Rectangle {
	x0, y0 := 1-fw, 1-fh
	if c == TopLeft || c == BottomLeft {
		x0 = 0
	}
	if c == BottomRight || c == BottomLeft {
		y0 = 0
	}
	return vg.Rectangle{Min: vg.Point{X: vg.Length(x0), Y: vg.Length(y0)}, Max: vg.Point{X: vg.Length(x0 + fw), Y: vg.Length(y0 + fh)}}
}

func cornerFree(c Corner, fw, fh float64, curves []plotter.XYs) bool {
	r := c.Box(fw, fh)
	in := func(x, y float64) bool {
		return x >= float64(r.Min.X) && x <= float64(r.Max.X) && y >= float64(r.Min.Y) && y <= float64(r.Max.Y)
	}
	for _, cv := range curves {
		for i, p := range cv {
			if in(p.X, p.Y) {
				return false
			}
			if i == 0 {
				continue
			}
			// a segment crossing the box with both ends outside it: sample it finely
			// enough that no box of a legend's size slips between two samples
			q := cv[i-1]
			n := int(math.Min(math.Ceil(math.Hypot(p.X-q.X, p.Y-q.Y)/0.005), 1e4))
			for k := 1; k < n; k++ {
				t := float64(k) / float64(n)
				if in(q.X+t*(p.X-q.X), q.Y+t*(p.Y-q.Y)) {
					return false
				}
			}
		}
	}
	return true
}

// Placed, when set, is told of every legend PlaceLegend places: the plot, the corner, the
// legend's size and the data it avoided, in data-area fractions. Tests use it to check
// each figure's legend against its data; nothing else sets it.
var Placed func(p *plot.Plot, c Corner, fw, fh float64, data []plotter.XYs)

// legendInset is the gap between a legend in a corner and the frame of the data area, and
// legendGap the gap between a legend outside the axes and the axes.
const (
	legendInset = vg.Length(4)
	legendGap   = vg.Length(10)
)

// PlaceLegend puts p's legend, for a figure of w × h, in the first corner of the data area
// where it covers none of curves (the figure's data, as drawn: polylines in data
// coordinates; a band passes its two edges), else below the axes when it is at most a
// third of the figure's height, else right of the axes. Call it after the axes' ranges
// are final (Pad, scales), right before Save or Render.
//
// The place is kept in p.Legend for Render: a corner as Top, Left and an inset (XOffs,
// YOffs toward the middle of the data area); right of the axes as XOffs > 0 with Left
// false; below as YOffs < 0 with Top false.
func PlaceLegend(p *plot.Plot, w, h vg.Length, curves ...plotter.XYs) Corner {
	fixAxes(p)
	fw, fh := LegendSize(p, w, h)
	var norm []plotter.XYs
	for _, cv := range curves {
		norm = append(norm, normalize(p, cv))
	}
	c := FreeCorner(fw, fh, norm...)
	if c == Outside {
		if _, lh := legendPoints(p); lh <= h/3 {
			c = Below
		}
	}
	if Placed != nil {
		Placed(p, c, fw, fh, norm)
	}
	setPlacement(p, c)
	return c
}

// normalize is cv's drawable points in data-area fractions of p (0 to 1 from the bottom
// left); points a log axis cannot show are left out.
func normalize(p *plot.Plot, cv plotter.XYs) plotter.XYs {
	var n plotter.XYs
	for _, q := range Points(cv) {
		if p.X.Scale == nil || p.Y.Scale == nil {
			continue
		}
		if _, ok := p.X.Scale.(plot.LogScale); ok && q.X <= 0 {
			continue
		}
		if _, ok := p.Y.Scale.(plot.LogScale); ok && q.Y <= 0 {
			continue
		}
		n = append(n, plotter.XY{X: p.X.Norm(q.X), Y: p.Y.Norm(q.Y)})
	}
	return n
}

// setPlacement records c in p.Legend (see PlaceLegend).
func setPlacement(p *plot.Plot, c Corner) {
	l := &p.Legend
	switch c {
	case Outside:
		l.Left, l.Top, l.XOffs, l.YOffs = false, true, 1, 0
	case Below:
		l.Left, l.Top, l.XOffs, l.YOffs = true, false, 0, -1
	default:
		l.Left = c == TopLeft || c == BottomLeft
		l.Top = c == TopRight || c == TopLeft
		l.XOffs, l.YOffs = legendInset, legendInset
		if !l.Left {
			l.XOffs = -legendInset
		}
		if l.Top {
			l.YOffs = -legendInset
		}
	}
}

// placement is where p's legend goes (see PlaceLegend): a corner, Outside or Below.
func placement(p *plot.Plot) Corner {
	l := p.Legend
	switch {
	case !l.Left && l.XOffs > 0:
		return Outside
	case !l.Top && l.YOffs < 0:
		return Below
	case l.Top && l.Left:
		return TopLeft
	case l.Top:
		return TopRight
	case l.Left:
		return BottomLeft
	}
	return BottomRight
}

// legendStrip is the room a legend outside the axes takes from a w × h figure: its width
// (right of the axes) or height (below them) and the gap to the axes; 0 inside the axes
// or without entries.
func legendStrip(p *plot.Plot, w, h vg.Length) vg.Length {
	lw, lh := legendPoints(p)
	if lw == 0 || lh == 0 {
		return 0
	}
	switch placement(p) {
	case Outside:
		return lw + legendGap
	case Below:
		return lh + p.Legend.TextStyle.FontExtents().Descent + legendGap + legendInset
	}
	return 0
}

// drawLegend draws p's legend where it is placed, on full (the image) whose plot was
// drawn in dc with data area data, and returns its box (empty without entries).
func drawLegend(p *plot.Plot, full, dc draw.Canvas, data vg.Rectangle) vg.Rectangle {
	lw, lh := legendPoints(p)
	if lw == 0 || lh == 0 {
		return vg.Rectangle{}
	}
	l := spaced(p.Legend)
	c := draw.Canvas{Canvas: full.Canvas, Rectangle: data}
	switch placement(p) {
	case Outside: // top aligned with the data, right of the axes
		c.Min.X, c.Max.X = dc.Max.X+legendGap, dc.Max.X+legendGap+lw
		l.Left, l.Top, l.XOffs, l.YOffs = true, true, 0, 0
	case Below: // under the axes, aligned with the data's left edge
		c.Min.Y, c.Max.Y = full.Min.Y, dc.Min.Y-legendGap/2
		l.Left, l.Top, l.XOffs, l.YOffs = true, true, 0, 0
	}
	l.Draw(c)
	return legendBox(l, c, lw, lh)
}

// legendBox is the box legend l of lw × lh covers when drawn on c (gonum's Legend.Draw:
// an icon column beside the text, the first entry a font descent under the top).
func legendBox(l plot.Legend, c draw.Canvas, lw, lh vg.Length) vg.Rectangle {
	var r vg.Rectangle
	if l.Left {
		r.Min.X = c.Min.X + l.XOffs
		r.Max.X = r.Min.X + lw
	} else {
		r.Max.X = c.Max.X + l.XOffs
		r.Min.X = r.Max.X - lw
	}
	if l.Top {
		r.Max.Y = c.Max.Y + l.YOffs
		r.Min.Y = r.Max.Y - lh - l.TextStyle.FontExtents().Descent
	} else {
		r.Min.Y = c.Min.Y + l.YOffs
		r.Max.Y = r.Min.Y + lh
	}
	return r
}

// LegendSize is p's legend's width and height as fractions of the data area of a w × h
// figure (0, 0 without entries).
func LegendSize(p *plot.Plot, w, h vg.Length) (fw, fh float64) {
	lw, lh := legendPoints(p)
	if lw == 0 || lh == 0 {
		return 0, 0
	}
	dc := p.DataCanvas(inner(draw.New(vgimg.New(w, h))))
	dw, dh := dc.Max.X-dc.Min.X, dc.Max.Y-dc.Min.Y
	if dw <= 0 || dh <= 0 {
		return 1, 1
	}
	return float64((lw + legendInset) / dw), float64((lh + legendInset) / dh)
}

// legendPoints is the width and height of p's legend's entries as drawn (0, 0 without
// any).
func legendPoints(p *plot.Plot) (vg.Length, vg.Length) {
	l := spaced(p.Legend)
	r := l.Rectangle(draw.New(vgimg.New(100, 100)))
	return r.Max.X - r.Min.X, r.Max.Y - r.Min.Y
}

// spaced is l with room between its entries (gonum's default of none lets one entry's
// descenders touch the next one's capitals).
func spaced(l plot.Legend) plot.Legend {
	if l.Padding == 0 {
		l.Padding = vg.Points(2)
	}
	return l
}

// Pad widens each axis of p by frac of its range on both sides (in log space on a log
// axis), so no marker sits on the frame. An axis whose ends are not drawable is left to
// Render.
func Pad(p *plot.Plot, frac float64) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if !Drawable(a.Min) || !Drawable(a.Max) || a.Max <= a.Min {
			continue
		}
		if _, ok := a.Scale.(plot.LogScale); ok && a.Min > 0 {
			lo, hi := math.Log(a.Min), math.Log(a.Max)
			d := frac * (hi - lo)
			a.Min, a.Max = math.Exp(lo-d), math.Exp(hi+d)
			continue
		}
		d := frac * (a.Max - a.Min)
		if Drawable(a.Min-d) && Drawable(a.Max+d) {
			a.Min, a.Max = a.Min-d, a.Max+d
		}
	}
}

// LogWorthy reports whether values call for a log axis: all positive and spanning more than
// a factor 10 (a Dirichlet α from 0.01 to 10, learning rates).
func LogWorthy(vs []float64) bool {
	if len(vs) < 2 {
		return false
	}
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if !(v > 0) || !Drawable(v) {
			return false
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi > 10*lo
}

// LogX gives p a logarithmic x axis with ticks at powers of ten and the values in between;
// an axis that reaches 0 or spans nothing (one value) stays linear. Call it after the
// axis range is set (by the data or by hand).
func LogX(p *plot.Plot) {
	if !(p.X.Min > 0) || p.X.Max <= p.X.Min {
		return // an axis reaching 0 or spanning nothing cannot be drawn on a log scale
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Label.Text += ", log scale"
}

// IntTicks marks whole numbers only (clients, classes: a tick at 2.5 names nothing), at
// most about ten labelled ones, the step a 1, 2 or 5 times a power of ten.
type IntTicks struct{}

// Ticks returns the whole-number ticks within [min, max].
func (IntTicks) Ticks(lo, hi float64) []plot.Tick {
	if !Drawable(lo) || !Drawable(hi) || hi < lo {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := 1.0
	for i := 0; (hi-lo)/step > 10; i++ {
		step *= []float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50, …
	}
	if (hi-lo)/step > 1e4 {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi && len(ticks) < 20; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v+0, 'f', 0, 64)})
	}
	// a range so far from 0 that v + step rounds back to v: gonum's own ticks
	if len(ticks) == 0 || len(ticks) == 20 || math.Abs(hi) > 1e15 || math.Abs(lo) > 1e15 {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	return ticks
}
