package chart

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// OkabeIto is the colour-blind-safe palette of Okabe and Ito (2008), ordered for lines on
// white: blue and vermillion first (told apart under every common colour-vision
// deficiency, unlike red and green), yellow last (faint on white). Every figure pfl draws
// takes its series' colours from it, through Color.
var OkabeIto = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{240, 228, 66, 255},  // yellow
}

// shapes are the markers of series, filled ones first (they read best at a small size).
var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{},
	draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// dashes are the line patterns of series: solid, dashed, dotted, dash-dot, long dashes.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)},
	{vg.Points(12), vg.Points(4)},
}

// Color is series i's colour. Series i and i + 8 share a colour; Shape and Dashes tell
// them apart.
func Color(i int) color.Color { return OkabeIto[mod(i, len(OkabeIto))] }

// Shape is series i's marker: with Color the second cue, so that series stay apart in
// grey print and for readers who cannot tell two colours apart. No two of the first 64
// series have both the same colour and the same marker.
func Shape(i int) draw.GlyphDrawer { return shapes[mod(i+i/len(OkabeIto), len(shapes))] }

// Dashes is series i's line pattern, the line's second cue beside its colour. No two of
// the first 40 series have both the same colour and the same pattern.
func Dashes(i int) []vg.Length { return dashes[mod(i+i/len(OkabeIto), len(dashes))] }

func mod(i, n int) int { return ((i % n) + n) % n }

// Transparent is c with opacity alpha (0 to 255), for bands that must not hide what lies
// under them.
func Transparent(c color.Color, alpha uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: alpha}
}

// AddLines adds named series (label, points, label, points, …) to p as lines with
// markers, series i in Color(i), Shape(i) and Dashes(i), each in the legend; a series of
// more than 30 points is marked at about 15 of them, so that the markers do not merge into
// a thick line. Points that cannot be drawn are left out and a series left empty is
// skipped (its colour is not passed on); it returns the series drawn, for PlaceLegend.
func AddLines(p *plot.Plot, series ...any) ([]plotter.XYs, error) {
	var drawn []plotter.XYs
	for i := 0; i+1 < len(series); i += 2 {
		name, _ := series[i].(string)
		pts, ok := series[i+1].(plotter.XYs)
		if !ok {
			return nil, fmt.Errorf("chart: series %q is %T, not plotter.XYs", name, series[i+1])
		}
		if pts = Points(pts); len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		marked := pts
		if len(pts) > 30 {
			marked = nil
			for j := 0; j < len(pts); j += (len(pts) + 14) / 15 {
				marked = append(marked, pts[j])
			}
		}
		marks, err := plotter.NewScatter(marked)
		if err != nil {
			return nil, err
		}
		n := i / 2
		line.Color, line.Dashes, line.Width = Color(n), Dashes(n), vg.Points(1.5)
		marks.Color, marks.Shape, marks.Radius = Color(n), Shape(n), vg.Points(3)
		p.Add(line, marks)
		p.Legend.Add(name, line, marks)
		drawn = append(drawn, pts)
	}
	return drawn, nil
}

// RoundTicks labels an axis at round values, at least four of them: the step is 1, 2 or 5
// times a power of ten, the largest that leaves four labels in the range, and every label
// has the decimals the step needs and no more (0.5 steps: "17.5", never "17.50"). Minor
// ticks mark the steps between. An axis it cannot label so (its ends not drawable, or
// values whose labels would need more than six decimals or seven digits) gets gonum's
// ticks.
type RoundTicks struct{}

// Ticks returns the ticks within [lo, hi].
func (RoundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !Drawable(lo) || !Drawable(hi) || !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step, mant := roundStep(lo, hi, 4)
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if decimals > 6 || math.Max(math.Abs(lo), math.Abs(hi)) >= 1e7 {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	first, last := math.Ceil(lo/step-1e-9), math.Floor(hi/step+1e-9)
	if last-first > 50 {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	var ticks []plot.Tick
	for k := first; k <= last; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v+0, 'f', decimals, 64)})
	}
	minor := step / 5
	if mant == 2 {
		minor = step / 4
	}
	for k := math.Ceil(lo / minor); k <= math.Floor(hi/minor) && len(ticks) < 400; k++ {
		if v := k * minor; math.Abs(math.Remainder(v, step)) > minor/2 {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// roundStep is the largest step of 1, 2 or 5 times a power of ten with at least n
// multiples in [lo, hi], and its mantissa.
func roundStep(lo, hi float64, n int) (float64, float64) {
	p := math.Pow(10, math.Floor(math.Log10(hi-lo)))
	for {
		for _, m := range []float64{5, 2, 1} {
			s := m * p
			if math.Floor(hi/s+1e-9)-math.Ceil(lo/s-1e-9)+1 >= float64(n) {
				return s, m
			}
		}
		p /= 10
	}
}

// Sequential is a colour map for counts: white at its minimum (0: nothing there) and only
// there, then from the lightest to the darkest blue of ColorBrewer's Blues at its maximum.
// The colour follows the square root of the value, so that one large count does not wash
// every smaller one out to near white; a colour bar drawn from it (plotter.ColorBar)
// shows the same mapping, labelled in counts.
type Sequential struct {
	min, max, alpha float64
}

// NewSequential is a Sequential colour map over [lo, hi].
func NewSequential(lo, hi float64) *Sequential {
	return &Sequential{min: lo, max: hi, alpha: 1}
}

// sequentialStops are the colours of Sequential from just above its minimum to its
// maximum, evenly spaced in the square root of the value (ColorBrewer's Blues).
var sequentialStops = []color.RGBA{
	{222, 235, 247, 255}, {198, 219, 239, 255}, {158, 202, 225, 255}, {107, 174, 214, 255},
	{66, 146, 198, 255}, {33, 113, 181, 255}, {8, 81, 156, 255}, {8, 48, 107, 255},
}

// At is the colour of v; a value outside the range is an error (palette.ErrUnderflow,
// palette.ErrOverflow), as gonum's colour maps.
func (s *Sequential) At(v float64) (color.Color, error) {
	switch {
	case math.IsNaN(v):
		return nil, palette.ErrNaN
	case v < s.min:
		return nil, palette.ErrUnderflow
	case v > s.max:
		return nil, palette.ErrOverflow
	case v == s.min:
		return color.NRGBA{R: 255, G: 255, B: 255, A: uint8(math.Round(255 * s.alpha))}, nil
	}
	f := math.Sqrt((v-s.min)/(s.max-s.min)) * float64(len(sequentialStops)-1)
	i := min(int(f), len(sequentialStops)-2)
	a, b, u := sequentialStops[i], sequentialStops[i+1], f-float64(i)
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + u*(float64(y)-float64(x)))) }
	return color.NRGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: uint8(math.Round(255 * s.alpha))}, nil
}

// Max is the top of the range.
func (s *Sequential) Max() float64 { return s.max }

// SetMax sets the top of the range.
func (s *Sequential) SetMax(v float64) { s.max = v }

// Min is the bottom of the range.
func (s *Sequential) Min() float64 { return s.min }

// SetMin sets the bottom of the range.
func (s *Sequential) SetMin(v float64) { s.min = v }

// Alpha is the opacity.
func (s *Sequential) Alpha() float64 { return s.alpha }

// SetAlpha sets the opacity, from 0 to 1.
func (s *Sequential) SetAlpha(a float64) { s.alpha = math.Max(0, math.Min(1, a)) }

// Palette is n colours evenly spaced over the range for plotter.HeatMap, the first one
// just above the minimum: a heat map rounds a small count to the first colour, so the
// cells holding nothing must reach white another way (plotter.HeatMap's NaN colour).
func (s *Sequential) Palette(n int) palette.Palette {
	cs := make([]color.Color, n)
	for i := range cs {
		v := math.Nextafter(s.min, math.Inf(1))
		if n > 1 && i > 0 {
			v = s.min + (s.max-s.min)*float64(i)/float64(n-1)
		}
		cs[i], _ = s.At(math.Min(v, s.max))
	}
	return colors(cs)
}

type colors []color.Color

func (c colors) Colors() []color.Color { return c }
