package report

import (
	"encoding/base64"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"pfl/engine/config"
	"pfl/engine/fl"
	"pfl/engine/internal/chart"
	"pfl/engine/rundir"
)

// figureHistory is a plausible run of rounds rounds and clients clients: accuracy rising
// from about 10 % towards 90 %, clients spread around the mean, loss falling.
func figureHistory(rounds, clients int, skill float64) []fl.RoundMetrics {
	var h []fl.RoundMetrics
	for r := 0; r < rounds; r++ {
		mean := 0.1 + skill*(1-math.Exp(-float64(r+1)/float64(rounds)*3))
		acc := make([]float64, clients)
		var ids []int
		for c := range acc {
			// clients spread around the mean, each algorithm ordering them differently
			u := math.Mod(float64(c)*0.618+skill*7.3, 1)
			acc[c] = math.Min(1, math.Max(0, mean+0.3*(u-0.5)))
			ids = append(ids, c)
		}
		h = append(h, fl.RoundMetrics{Round: r, Clients: ids, TrainLoss: 2.3 * math.Exp(-float64(r)/float64(rounds)), Samples: 10,
			Eval: &fl.EvalResult{Accuracy: acc, Micro: mean, Mean: mean, Std: 0.05}})
	}
	return h
}

// TestFigures draws every kind of figure pfl writes from a run's numbers on small
// synthetic data and checks what a reader would otherwise have to look for: a title and
// axis labels, accuracy axes within [0, 100] % (plus padding), densities within their
// bounds, and a legend that covers no data (in a corner the data leave free, or beside the
// axes). With PFL_FIGURES set to a folder the figures are kept there to be looked at.
func TestFigures(t *testing.T) {
	keep := os.Getenv("PFL_FIGURES")
	type placement struct {
		c      chart.Corner
		fw, fh float64
		data   []plotter.XYs
	}
	var rendered []*plot.Plot
	placed := map[*plot.Plot]placement{}
	chart.Rendered = func(p, _ *plot.Plot) { rendered = append(rendered, p) }
	chart.Placed = func(p *plot.Plot, c chart.Corner, fw, fh float64, data []plotter.XYs) {
		placed[p] = placement{c, fw, fh, data}
	}
	defer func() { chart.Rendered, chart.Placed = nil, nil }()

	local, fedavg, fedtp := figureHistory(20, 12, 0.5), figureHistory(20, 12, 0.3), figureHistory(20, 12, 0.75)
	last := func(h []fl.RoundMetrics) []float64 { return h[len(h)-1].Eval.Accuracy }
	suite := []Run{{Summary: rundir.Summary{Name: "local"}, Final: last(local)},
		{Summary: rundir.Summary{Name: "fedavg", Novel: []rundir.NovelSummary{{Tuned: "head", Micro: []float64{0.2, 0.5, 0.6, 0.65}}}}, Final: last(fedavg)},
		{Summary: rundir.Summary{Name: "fedtp", Novel: []rundir.NovelSummary{{Tuned: "head", Micro: []float64{0.3, 0.6, 0.7, 0.72}}}}, Final: last(fedtp)}}

	for _, tc := range []struct {
		kind  string
		draw  func(t *testing.T, dir string) error
		files []string
	}{
		{"run curves", func(t *testing.T, dir string) error { return RunFigures(dir, "fedtp", fedtp, nil) },
			[]string{"accuracy.png", "loss.png", "clients.png"}},
		{"comparison", func(t *testing.T, dir string) error {
			a, b := filepath.Join(dir, "fedavg"), filepath.Join(dir, "fedtp")
			writeMetrics(t, a, fedavg)
			writeMetrics(t, b, fedtp)
			return Compare(filepath.Join(dir, "compare.png"), []string{a, b})
		}, []string{"compare.png"}},
		{"bands over seeds", func(t *testing.T, dir string) error {
			c := func(h []fl.RoundMetrics, d float64) plotter.XYs {
				var pts plotter.XYs
				for _, m := range h {
					pts = append(pts, plotter.XY{X: float64(m.Round + 1), Y: 100*m.Eval.Micro + d*math.Sin(float64(m.Round))})
				}
				return pts
			}
			return drawBands(filepath.Join(dir, "bands.png"), "data.alpha=0.1: test accuracy: mean over 3 seeds, band min–max",
				[]bandCurve{band("fedavg", []plotter.XYs{c(fedavg, -4), c(fedavg, 0), c(fedavg, 5)}),
					band("fedtp", []plotter.XYs{c(fedtp, -3), c(fedtp, 1), c(fedtp, 4)})})
		}, []string{"bands.png"}},
		{"sweep and per-client sweep", func(t *testing.T, dir string) error { return figureGrid(t, dir) },
			[]string{"sweep-accuracy-fedtp.png", "sweep-accuracy-fedperfix.png"}},
		{"gain density", func(t *testing.T, dir string) error { return gainDensity(dir, suite) }, []string{"gain_density.png"}},
		{"novel clients", func(t *testing.T, dir string) error { return novelPlot(dir, suite) }, []string{"novel.png"}},
		{"accuracy distribution", func(t *testing.T, dir string) error {
			for i, f := range []*figure{distribution([]*runData{figureRun("fedtp", fedtp)}),
				distribution([]*runData{figureRun("fedavg", fedavg), figureRun("fedtp", fedtp)})} {
				if f == nil {
					return fmt.Errorf("distribution %d: no figure", i)
				}
				png, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(f.Src), "data:image/png;base64,"))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("distribution-%d.png", i+1)), png, 0o644); err != nil {
					return err
				}
			}
			return nil
		}, []string{"distribution-1.png", "distribution-2.png"}},
		{"t-SNE", func(t *testing.T, dir string) error { return figureTSNE(t, dir) }, []string{"embeddings_tsne.png"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			rendered = nil
			dir := t.TempDir()
			if keep != "" {
				dir = filepath.Join(keep, strings.ReplaceAll(tc.kind, " ", "-"))
				os.RemoveAll(dir)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.draw(t, dir); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("no %s: %v", f, err)
				}
			}
			checkDrawn(t, rendered, func(p *plot.Plot) bool {
				pl, ok := placed[p]
				if ok {
					checkLegend(t, p, pl.c, pl.fw, pl.fh, pl.data)
				}
				return ok
			})
		})
	}
}

// checkDrawn checks every figure rendered (checkFigure) and that its legend was placed:
// by PlaceLegend, which checkPlaced checks and reports, or beside the axes.
func checkDrawn(t *testing.T, rendered []*plot.Plot, checkPlaced func(*plot.Plot) bool) {
	t.Helper()
	if len(rendered) == 0 {
		t.Fatal("no figure drawn")
	}
	for _, p := range rendered {
		checkFigure(t, p)
		if !checkPlaced(p) && p.Legend.XOffs <= 0 && legendEntries(p) {
			t.Errorf("%q: legend placed by neither PlaceLegend nor LegendOutside", p.Title.Text)
		}
	}
}

// legendEntries reports whether p's legend has an entry (a legend of none is not drawn).
func legendEntries(p *plot.Plot) bool {
	fw, fh := chart.LegendSize(p, 700, 400)
	return fw > 0 && fh > 0
}

// checkFigure checks p's title, labels and axis ranges.
func checkFigure(t *testing.T, p *plot.Plot) {
	t.Helper()
	name := p.Title.Text
	if strings.TrimSpace(name) == "" {
		t.Errorf("a figure without a title (x: %q, y: %q)", p.X.Label.Text, p.Y.Label.Text)
	}
	if p.X.Label.Text == "" || p.Y.Label.Text == "" {
		t.Errorf("%q: axis label missing (x: %q, y: %q)", name, p.X.Label.Text, p.Y.Label.Text)
	}
	within := func(axis string, a plot.Axis, lo, hi float64) {
		pad := 0.1 * (hi - lo)
		if a.Min < lo-pad || a.Max > hi+pad {
			t.Errorf("%q: %s axis %g to %g, want within [%g, %g] plus padding", name, axis, a.Min, a.Max, lo, hi)
		}
	}
	for _, a := range []struct {
		name string
		axis plot.Axis
	}{{"x", p.X}, {"y", p.Y}} {
		switch l := a.axis.Label.Text; {
		case strings.Contains(l, "accuracy") && strings.Contains(l, "%"):
			within(a.name, a.axis, 0, 100)
		case strings.Contains(l, "percentage points"):
			within(a.name, a.axis, -100, 100)
		}
	}
}

// checkLegend checks that a legend placed in corner c (fw × fh of the data area) covers
// none of data (data-area fractions), sampling every segment between two points.
func checkLegend(t *testing.T, p *plot.Plot, c chart.Corner, fw, fh float64, data []plotter.XYs) {
	t.Helper()
	if c == chart.Outside {
		if p.Legend.XOffs <= 0 || p.Legend.Left {
			t.Errorf("%q: legend meant to be beside the axes is inside", p.Title.Text)
		}
		return
	}
	if p.Legend.Left != (c == chart.TopLeft || c == chart.BottomLeft) || p.Legend.Top != (c == chart.TopLeft || c == chart.TopRight) {
		t.Errorf("%q: legend aligned left %t top %t, not in corner %d", p.Title.Text, p.Legend.Left, p.Legend.Top, c)
	}
	box := c.Box(fw, fh)
	for _, d := range data {
		for i, q := range d {
			steps := 1
			if i > 0 {
				steps = 200
			}
			for k := 0; k < steps; k++ {
				x, y := q.X, q.Y
				if i > 0 {
					f := float64(k) / float64(steps)
					x, y = d[i-1].X+f*(q.X-d[i-1].X), d[i-1].Y+f*(q.Y-d[i-1].Y)
				}
				if x >= float64(box.Min.X) && x <= float64(box.Max.X) && y >= float64(box.Min.Y) && y <= float64(box.Max.Y) {
					t.Errorf("%q: legend in corner %d covers data at (%.3f, %.3f) of the data area", p.Title.Text, c, x, y)
					return
				}
			}
		}
	}
}

// figureRun is a run of history h, named name, as a report page reads it.
func figureRun(name string, h []fl.RoundMetrics) *runData {
	var lines []rundir.Line
	for _, m := range h {
		lines = append(lines, rundir.RoundLine(m))
	}
	return &runData{cfg: config.Config{Name: name}, lines: lines}
}

// figureGrid draws a one-key sweep over learning rates (a factor 100: a log axis) with two
// seeds.
func figureGrid(t *testing.T, dir string) error {
	t.Helper()
	cfg := filled(config.Config{Out: filepath.Dir(dir), Name: filepath.Base(dir), Seeds: []uint64{1, 2},
		Sweep: []config.SweepAxis{{Key: "train.lr", Values: []string{"0.001", "0.01", "0.1"}}}})
	cfg.Data.Dataset, cfg.Data.Clients, cfg.Train.Participation = "synthetic:300", 6, 1
	cg, err := config.NewGrid(cfg)
	if err != nil {
		return err
	}
	g := &gridRuns{Grid: cg}
	for i, l := range g.Runs {
		h := figureHistory(10, 6, 0.2+0.2*float64(l.Point)+0.1*float64(l.Member))
		writeMetrics(t, l.Dir(), h)
		y := h[len(h)-1].Eval.Mean + 0.02*float64(i%2)
		g.runs = append(g.runs, &rundir.Summary{Name: l.Config.Name, TailMean: y, FinalMean: y, FinalMicro: y})
	}
	if err := g.plots(); err != nil {
		return err
	}
	return g.clientPlots()
}

// figureTSNE draws the t-SNE of eight clients' embeddings in two clusters.
func figureTSNE(t *testing.T, dir string) error {
	t.Helper()
	cfg := filled(config.Config{Out: filepath.Dir(dir), Name: filepath.Base(dir)})
	if err := rundir.WriteJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("client,novel,z0,z1,z2\n")
	for c := 0; c < 8; c++ {
		fmt.Fprintf(&b, "%d,%t,%g,%g,%g\n", c, c == 7, float64(c%2)*5+0.1*float64(c), float64(c%2)*-3, 0.3*float64(c))
	}
	if err := os.WriteFile(filepath.Join(dir, "embeddings.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "partition.json"), []byte(`{"config": {"method": "iid"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return EmbeddingTSNE(dir)
}
