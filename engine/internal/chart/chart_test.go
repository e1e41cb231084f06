package chart

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Degenerate are the series a figure of pfl may be handed: one point, equal values (at
// every magnitude, including one where gonum's own ±1 widening is lost in rounding),
// values near the float64 limits, and non-finite ones.
var Degenerate = map[string][]float64{
	"one point":        {0.5},
	"all equal":        {0.3, 0.3, 0.3},
	"equal and huge":   {3.8e25, 3.8e25},
	"equal and tiny":   {1e-320, 1e-320},
	"huge range":       {-1e300, 1e300},
	"beyond the limit": {1e308, -1e308, 0},
	"some non-finite":  {math.NaN(), math.Inf(1), 0.25, math.Inf(-1)},
	"all non-finite":   {math.NaN(), math.Inf(1)},
	"nearly equal":     {1, 1 + 1e-15},
}

func series(ys []float64) plotter.XYs {
	var pts plotter.XYs
	for i, y := range ys {
		pts = append(pts, plotter.XY{X: float64(i + 1), Y: y})
	}
	return pts
}

// TestEveryKindOfPlotSurvivesDegenerateData draws lines, scatters, histograms and the
// same series as x coordinates, for every degenerate series, in both formats pfl writes.
func TestEveryKindOfPlotSurvivesDegenerateData(t *testing.T) {
	for name, ys := range Degenerate {
		t.Run(name, func(t *testing.T) {
			pts := Points(series(ys))
			flipped := make(plotter.XYs, len(pts))
			for i, p := range pts {
				flipped[i] = plotter.XY{X: p.Y, Y: p.X}
			}
			kinds := map[string]func(p *plot.Plot) error{
				"lines": func(p *plot.Plot) error { return plotutil.AddLinePoints(p, "a", pts) },
				"x":     func(p *plot.Plot) error { return plotutil.AddLinePoints(p, "a", flipped) },
				"scatter": func(p *plot.Plot) error {
					s, err := plotter.NewScatter(pts)
					if err == nil {
						p.Add(s)
					}
					return err
				},
				"histogram": func(p *plot.Plot) error {
					h, err := plotter.NewHist(plotter.Values(Values(ys)), 20)
					if err == nil {
						p.Add(h)
					}
					return err
				},
			}
			for kind, add := range kinds {
				if len(pts) == 0 {
					continue // nothing drawable: the callers draw no figure
				}
				p := plot.New()
				if err := add(p); err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				for _, ext := range []string{".png", ".svg"} {
					path := filepath.Join(t.TempDir(), kind+ext)
					if err := Save(p, 4*vg.Inch, 3*vg.Inch, path); err != nil {
						t.Fatalf("%s: %v", kind, err)
					}
					if st, err := os.Stat(path); err != nil || st.Size() == 0 {
						t.Fatalf("%s: no figure at %s (%v)", kind, path, err)
					}
				}
			}
		})
	}
}

// TestEmptyPlotIsDrawn: a plot with no data at all has infinite axis ends.
func TestEmptyPlotIsDrawn(t *testing.T) {
	if _, err := Render(plot.New(), 4*vg.Inch, 3*vg.Inch, "png"); err != nil {
		t.Fatal(err)
	}
}

// TestPanicBecomesAnError: whatever gonum panics on comes back as an error, and the file
// at the path stays as it was.
func TestPanicBecomesAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.png")
	if err := os.WriteFile(path, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := plot.New()
	p.Add(panicker{})
	if err := Save(p, 4*vg.Inch, 3*vg.Inch, path); err == nil {
		t.Fatal("no error from a plotter that panics")
	}
	if b, _ := os.ReadFile(path); string(b) != "before" {
		t.Fatalf("the earlier file was replaced by %q", b)
	}
}

type panicker struct{}

func (panicker) Plot(draw.Canvas, *plot.Plot) { panic("a plotter that panics") }
