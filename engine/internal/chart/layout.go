package chart

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Corner is where a legend sits inside the data area of a figure.
type Corner int

// The four corners, in the order FreeCorner tries them: top right first (where readers
// look for a legend), bottom left last.
const (
	TopRight Corner = iota
	TopLeft
	BottomRight
	BottomLeft
	Outside // no corner is free: right of the axes
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

// PlaceLegend puts p's legend, for a figure of w × h, in the first corner of the data area
// where it covers none of curves (the figure's data, as drawn: polylines in data
// coordinates; a band passes its two edges), else outside the axes on the right. Call it
// after the axes' ranges are final (Pad, scales), right before Save or Render.
func PlaceLegend(p *plot.Plot, w, h vg.Length, curves ...plotter.XYs) Corner {
	fixAxes(p)
	fw, fh := LegendSize(p, w, h)
	var norm []plotter.XYs
	for _, cv := range curves {
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
		norm = append(norm, n)
	}
	c := FreeCorner(fw, fh, norm...)
	if Placed != nil {
		Placed(p, c, fw, fh, norm)
	}
	p.Legend.XOffs, p.Legend.YOffs = 0, 0
	switch c {
	case Outside:
		LegendOutside(p, w, h)
	default:
		p.Legend.Left = c == TopLeft || c == BottomLeft
		p.Legend.Top = c == TopRight || c == TopLeft
		// inset from the frame so the legend does not touch the axes
		inset := vg.Points(4)
		if p.Legend.Left {
			p.Legend.XOffs = inset
		} else {
			p.Legend.XOffs = -inset
		}
		if p.Legend.Top {
			p.Legend.YOffs = -inset
		} else {
			p.Legend.YOffs = inset
		}
	}
	return c
}

// LegendOutside puts p's legend right of the axes, top aligned: Render narrows the axes by
// the legend's width. For figures whose data fill the whole area (a scatter of clients).
func LegendOutside(p *plot.Plot, w, h vg.Length) {
	width, _ := legendPoints(p, w, h)
	p.Legend.Left, p.Legend.Top = false, true
	p.Legend.YOffs = 0
	p.Legend.XOffs = width + vg.Points(10)
}

// LegendSize is p's legend's width and height as fractions of the data area of a w × h
// figure (0, 0 without entries).
func LegendSize(p *plot.Plot, w, h vg.Length) (fw, fh float64) {
	lw, lh := legendPoints(p, w, h)
	dc := p.DataCanvas(draw.New(vgimg.New(w, h)))
	dw, dh := dc.Max.X-dc.Min.X, dc.Max.Y-dc.Min.Y
	if dw <= 0 || dh <= 0 {
		return 1, 1
	}
	return float64(lw / dw), float64(lh / dh)
}

func legendPoints(p *plot.Plot, w, h vg.Length) (vg.Length, vg.Length) {
	r := p.Legend.Rectangle(draw.New(vgimg.New(w, h)))
	return r.Max.X - r.Min.X, r.Max.Y - r.Min.Y
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

// Categorical are twelve colours told apart at a glance (Tableau's ten, then two darker
// ones), for figures with a colour per client; plotutil's seven repeat too soon.
var Categorical = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255}, color.RGBA{0, 0, 0, 255}, color.RGBA{0, 0, 128, 255},
}
