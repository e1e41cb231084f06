package chart

import (
	"math"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// TestFreeCorner: the legend goes in the first corner no point or segment enters, and
// beside the axes when all four are taken or it is too large for any.
func TestFreeCorner(t *testing.T) {
	rising := plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}} // through bottom left and top right
	falling := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 0}}
	for _, tc := range []struct {
		name   string
		fw, fh float64
		curves []plotter.XYs
		want   Corner
	}{
		{"no data", 0.2, 0.1, nil, TopRight},
		{"a rising line", 0.2, 0.1, []plotter.XYs{rising}, TopLeft},
		{"both diagonals", 0.2, 0.1, []plotter.XYs{rising, falling}, Outside},
		{"a line across the top", 0.2, 0.1, []plotter.XYs{{{X: 0, Y: 0.95}, {X: 1, Y: 0.95}}}, BottomRight},
		{"a segment crossing the corner, ends outside it", 0.2, 0.2, []plotter.XYs{{{X: 0.7, Y: 1}, {X: 1, Y: 0.7}}}, TopLeft},
		{"a marker in the top right", 0.2, 0.1, []plotter.XYs{{{X: 0.95, Y: 0.95}}}, TopLeft},
		{"too wide for any corner", 0.6, 0.1, nil, Outside},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FreeCorner(tc.fw, tc.fh, tc.curves...); got != tc.want {
				t.Errorf("corner %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPlaceLegend: on a real plot the legend lands in the free corner, aligned to it, and
// Render reserves room for a legend beside the axes or below them.
func TestPlaceLegend(t *testing.T) {
	p := plot.New()
	pts := plotter.XYs{{X: 1, Y: 10}, {X: 10, Y: 90}}
	l, _ := plotter.NewLine(pts)
	p.Add(l)
	p.Legend.Add("rising", l)
	if c := PlaceLegend(p, 7*vg.Inch, 4*vg.Inch, pts); c != TopLeft || !p.Legend.Left || !p.Legend.Top {
		t.Errorf("corner %d (left %t, top %t), want top left", c, p.Legend.Left, p.Legend.Top)
	}
	setPlacement(p, Outside)
	if placement(p) != Outside {
		t.Errorf("outside: placed %d", placement(p))
	}
	if _, err := Render(p, 7*vg.Inch, 4*vg.Inch, "png"); err != nil {
		t.Error(err)
	}
	falling := plotter.XYs{{X: 1, Y: 90}, {X: 10, Y: 10}}
	if c := PlaceLegend(p, 7*vg.Inch, 4*vg.Inch, pts, falling); c != Below || placement(p) != Below {
		t.Errorf("both diagonals taken, one entry: placed %d, want below", c)
	}
}

// TestLogWorthyAndPad: a log axis for positive values spanning more than a factor 10;
// padding widens in log space there.
func TestLogWorthyAndPad(t *testing.T) {
	for _, tc := range []struct {
		vs   []float64
		want bool
	}{{[]float64{0.01, 0.1, 1}, true}, {[]float64{1, 5}, false}, {[]float64{0, 1, 100}, false}, {[]float64{-1, 100}, false}, {[]float64{3}, false}} {
		if got := LogWorthy(tc.vs); got != tc.want {
			t.Errorf("LogWorthy(%v) = %t", tc.vs, got)
		}
	}
	p := plot.New()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0.01, 1, 0, 100
	LogX(p)
	Pad(p, 0.1)
	if lo, hi := math.Log10(p.X.Min), math.Log10(p.X.Max); math.Abs(lo+2.2) > 1e-9 || math.Abs(hi-0.2) > 1e-9 {
		t.Errorf("log axis padded to %g..%g, want 10^-2.2..10^0.2", p.X.Min, p.X.Max)
	}
	if p.Y.Min != -10 || p.Y.Max != 110 {
		t.Errorf("linear axis padded to %g..%g", p.Y.Min, p.Y.Max)
	}
}

// TestIntTicks: whole numbers only, at most about ten labelled.
func TestIntTicks(t *testing.T) {
	for _, r := range [][2]float64{{-0.5, 3.5}, {0, 99}, {-0.5, 0.5}, {0, 1e6}} {
		ticks := IntTicks{}.Ticks(r[0], r[1])
		if len(ticks) == 0 || len(ticks) > 11 {
			t.Errorf("%v: %d ticks", r, len(ticks))
		}
		for _, tk := range ticks {
			if tk.Value != math.Trunc(tk.Value) || tk.Label == "-0" {
				t.Errorf("%v: tick %v %q", r, tk.Value, tk.Label)
			}
		}
	}
}
