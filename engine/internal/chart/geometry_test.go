package chart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// legendFigure is a plot of curves whose legend has entries names; ink false draws the
// legend's text and icons transparent, so that the image differs from an inked one only
// where the legend is.
func legendFigure(t *testing.T, curves []plotter.XYs, names []string, ink bool) *plot.Plot {
	t.Helper()
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "a title", "round", "accuracy, %"
	for i, c := range curves {
		l, err := plotter.NewLine(c)
		if err != nil {
			t.Fatal(err)
		}
		l.Color = Color(i)
		p.Add(l)
	}
	if !ink {
		p.Legend.TextStyle.Color = color.Transparent
	}
	for i, n := range names {
		thumb, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}})
		if err != nil {
			t.Fatal(err)
		}
		thumb.Color, thumb.Dashes = Color(i), Dashes(i)
		if !ink {
			thumb.Color = color.Transparent
		}
		p.Legend.Add(n, thumb)
	}
	return p
}

// drawnPNG renders p as Render does, with its legend placed for curves, and returns the
// image and the geometry Render reported.
func drawnPNG(t *testing.T, p *plot.Plot, curves []plotter.XYs) (image.Image, Geometry) {
	t.Helper()
	var g Geometry
	Drawn = func(_ *plot.Plot, got Geometry) { g = got }
	defer func() { Drawn = nil }()
	PlaceLegend(p, 7*vg.Inch, 4*vg.Inch, curves...)
	b, err := Render(p, 7*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img, g
}

// TestLegendGeometry renders a legend in each place PlaceLegend chooses (a free corner;
// below the axes when no corner is free; right of them when it is also too tall to go
// below) and checks, on the pixels, that everything the legend draws lies inside the box
// Render reports, that the box lies inside the image, and that no curve passes through it.
func TestLegendGeometry(t *testing.T) {
	rising := plotter.XYs{{X: 1, Y: 10}, {X: 10, Y: 90}}
	falling := plotter.XYs{{X: 1, Y: 90}, {X: 10, Y: 10}}
	many := make([]string, 14)
	for i := range many {
		many[i] = fmt.Sprintf("member %d with a long name", i)
	}
	for _, tc := range []struct {
		name   string
		curves []plotter.XYs
		names  []string
		want   Corner
	}{
		{"free corner", []plotter.XYs{rising}, []string{"fedavg", "fedtp"}, TopLeft},
		{"no free corner", []plotter.XYs{rising, falling}, []string{"fedavg", "fedtp (1 of 3 diverged (round 26))"}, Below},
		{"too tall to go below", []plotter.XYs{rising, falling}, many, Outside},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inked, g := drawnPNG(t, legendFigure(t, tc.curves, tc.names, true), tc.curves)
			blank, _ := drawnPNG(t, legendFigure(t, tc.curves, tc.names, false), tc.curves)
			if dir := os.Getenv("PFL_FIGURES"); dir != "" { // to be looked at
				var b bytes.Buffer
				if err := png.Encode(&b, inked); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "legend-"+strings.ReplaceAll(tc.name, " ", "-")+".png"), b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := legendFigure(t, tc.curves, tc.names, true)
			if c := PlaceLegend(p, 7*vg.Inch, 4*vg.Inch, tc.curves...); c != tc.want {
				t.Fatalf("placed %d, want %d", c, tc.want)
			}
			checkInside(t, g)
			checkInk(t, inked, blank, g)
			for _, c := range tc.curves {
				for _, q := range normalize(p, c) {
					checkNotUnder(t, g, q, c)
				}
			}
			for i := 1; i < len(tc.curves[0]); i++ {
				a, b := tc.curves[0][i-1], tc.curves[0][i]
				for k := 0; k <= 100; k++ {
					f := float64(k) / 100
					checkNotUnder(t, g, plotter.XY{X: p.X.Norm(a.X + f*(b.X-a.X)), Y: p.Y.Norm(a.Y + f*(b.Y-a.Y))}, tc.curves[0])
				}
			}
		})
	}
}

// checkInside checks that g's legend box lies inside its image.
func checkInside(t *testing.T, g Geometry) {
	t.Helper()
	l, c := g.Legend, g.Canvas
	if l.Max.X <= l.Min.X || l.Max.Y <= l.Min.Y {
		t.Fatalf("empty legend box %v", l)
	}
	if l.Min.X < c.Min.X || l.Min.Y < c.Min.Y || l.Max.X > c.Max.X || l.Max.Y > c.Max.Y {
		t.Errorf("legend box %v outside the image %v", l, c)
	}
}

// checkNotUnder checks that data point q (data-area fractions) of curve c is not under
// g's legend.
func checkNotUnder(t *testing.T, g Geometry, q plotter.XY, c plotter.XYs) {
	t.Helper()
	x := g.Data.Min.X + vg.Length(q.X)*(g.Data.Max.X-g.Data.Min.X)
	y := g.Data.Min.Y + vg.Length(q.Y)*(g.Data.Max.Y-g.Data.Min.Y)
	if x >= g.Legend.Min.X && x <= g.Legend.Max.X && y >= g.Legend.Min.Y && y <= g.Legend.Max.Y {
		t.Errorf("the legend %v covers a point of %v at (%.1f, %.1f)", g.Legend, c, x, y)
	}
}

// checkInk checks that every pixel where the inked image differs from the blank one (the
// legend's text and icons) lies within the legend box, with a pixel to spare, and that
// the legend drew something.
func checkInk(t *testing.T, inked, blank image.Image, g Geometry) {
	t.Helper()
	if inked.Bounds() != blank.Bounds() {
		t.Fatalf("images of %v and %v: the legend's ink moved the layout", inked.Bounds(), blank.Bounds())
	}
	b := inked.Bounds()
	scale := float64(b.Dx()) / float64(g.Canvas.Max.X-g.Canvas.Min.X) // pixels per point
	var outside []string
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r1, g1, b1, _ := inked.At(x, y).RGBA()
			r2, g2, b2, _ := blank.At(x, y).RGBA()
			if r1 == r2 && g1 == g2 && b1 == b2 {
				continue
			}
			n++
			px, py := float64(x)/scale, float64(b.Max.Y-1-y)/scale // points from the bottom left
			l := g.Legend
			if px < float64(l.Min.X)-1.5 || px > float64(l.Max.X)+1.5 || py < float64(l.Min.Y)-1.5 || py > float64(l.Max.Y)+1.5 {
				outside = append(outside, fmt.Sprintf("(%.0f, %.0f)", px, py))
			}
		}
	}
	if n == 0 {
		t.Error("the legend drew nothing")
	}
	if len(outside) > 0 {
		t.Errorf("%d legend pixels outside its box %v, e.g. %s", len(outside), g.Legend, strings.Join(outside[:min(5, len(outside))], " "))
	}
}

// TestRoundTicks: at least four labelled ticks at a step of 1, 2 or 5 times a power of
// ten, every label with the same decimals and none to spare.
func TestRoundTicks(t *testing.T) {
	for _, r := range [][2]float64{{30, 70}, {17, 18.2}, {0, 100}, {-0.5, 0.5}, {0.001, 0.0013}, {95, 105}, {0, 3}, {-3.2, 81.4}, {0.25, 0.35}} {
		var labels []string
		var values []float64
		for _, tk := range (RoundTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				labels, values = append(labels, tk.Label), append(values, tk.Value)
			}
		}
		if len(labels) < 4 || len(labels) > 10 {
			t.Errorf("%v: %d labels %v, want 4 to 10", r, len(labels), labels)
			continue
		}
		step := values[1] - values[0]
		m := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		if math.Abs(m-1) > 1e-6 && math.Abs(m-2) > 1e-6 && math.Abs(m-5) > 1e-6 {
			t.Errorf("%v: step %g is not 1, 2 or 5 times a power of ten", r, step)
		}
		dec := func(s string) int {
			if _, f, ok := strings.Cut(s, "."); ok {
				return len(f)
			}
			return 0
		}
		spare := dec(labels[0]) > 0
		for _, l := range labels {
			if dec(l) != dec(labels[0]) {
				t.Errorf("%v: labels %v with different decimals", r, labels)
			}
			spare = spare && strings.HasSuffix(l, "0")
		}
		if spare {
			t.Errorf("%v: labels %v all end in a zero decimal", r, labels)
		}
	}
}

// TestSequential: white at zero and only there, darker as the count grows, and a heat
// map's first colour (a count of 1 rounds to it) not white.
func TestSequential(t *testing.T) {
	s := NewSequential(0, 1000)
	lum := func(v float64) float64 {
		c, err := s.At(v)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := c.RGBA()
		return 0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)
	}
	if lum(0) < 65535*0.999 {
		t.Errorf("0 is not white: luminance %g", lum(0))
	}
	prev := lum(0)
	for _, v := range []float64{1, 10, 100, 500, 1000} {
		l := lum(v)
		if l >= prev {
			t.Errorf("%g: luminance %g, not darker than the smaller count's %g", v, l, prev)
		}
		prev = l
	}
	if r, g, b, _ := s.Palette(64).Colors()[0].RGBA(); r == 0xffff && g == 0xffff && b == 0xffff {
		t.Error("the heat map's first colour is white: a count of 1 would look like 0")
	}
	if _, err := s.At(-1); err == nil {
		t.Error("no error for a value under the range")
	}
}

// TestSeriesStyles: the first eight series have eight colours; no two of the first 64
// share colour and marker, nor colour and dashes.
func TestSeriesStyles(t *testing.T) {
	seen := map[string]int{}
	dash := map[string]int{}
	for i := 0; i < 64; i++ {
		r, g, b, _ := Color(i).RGBA()
		k := fmt.Sprintf("%d %d %d %T", r, g, b, Shape(i))
		if j, ok := seen[k]; ok {
			t.Errorf("series %d and %d: same colour and marker", j, i)
		}
		seen[k] = i
		if i < 40 {
			d := fmt.Sprintf("%d %d %d %v", r, g, b, Dashes(i))
			if j, ok := dash[d]; ok {
				t.Errorf("series %d and %d: same colour and dashes", j, i)
			}
			dash[d] = i
		}
	}
	colours := map[color.Color]bool{}
	for i := 0; i < 8; i++ {
		colours[Color(i)] = true
	}
	if len(colours) != 8 {
		t.Errorf("%d colours among the first eight series", len(colours))
	}
}

// TestTitleClearsTheTop: the title keeps a margin from the image's top edge (gonum sets
// it flush against it).
func TestTitleClearsTheTop(t *testing.T) {
	p := legendFigure(t, []plotter.XYs{{{X: 1, Y: 1}, {X: 2, Y: 3}}}, nil, true)
	p.Title.Text = "Tall Title Ågj"
	img, _ := drawnPNG(t, p, nil)
	b := img.Bounds()
	const rows = 8 // pixels: at 96 dpi, 6 points
	for y := b.Min.Y; y < b.Min.Y+rows; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				t.Fatalf("ink at (%d, %d), within the top %d pixels", x, y, rows)
			}
		}
	}
}
