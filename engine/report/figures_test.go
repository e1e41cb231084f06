package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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
	drawn := map[*plot.Plot]chart.Geometry{}
	chart.Rendered = func(p, _ *plot.Plot) { rendered = append(rendered, p) }
	chart.Placed = func(p *plot.Plot, c chart.Corner, fw, fh float64, data []plotter.XYs) {
		placed[p] = placement{c, fw, fh, data}
	}
	chart.Drawn = func(p *plot.Plot, g chart.Geometry) { drawn[p] = g }
	defer func() { chart.Rendered, chart.Placed, chart.Drawn = nil, nil, nil }()

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
			for i, runs := range [][]*runData{{figureRun("fedtp", fedtp)}, {figureRun("fedavg", fedavg), figureRun("fedtp", fedtp)}} {
				if distribution(runs) == nil {
					return fmt.Errorf("distribution %d: no figure", i)
				}
				p, _, w, h := distributionPlot(runs)
				if err := chart.Save(p, w, h, filepath.Join(dir, fmt.Sprintf("distribution-%d.png", i+1))); err != nil {
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
					checkGeometry(t, p, drawn[p], pl.data)
				}
				return ok
			})
			for _, p := range slices.Clone(rendered) {
				checkPalette(t, p)
			}
		})
	}
}

// checkGeometry checks, where Render drew p (g), that its legend lies inside the image
// and that none of data (the figure's data in data-area fractions, as PlaceLegend saw
// them) lies under the legend's box.
func checkGeometry(t *testing.T, p *plot.Plot, g chart.Geometry, data []plotter.XYs) {
	t.Helper()
	l, c := g.Legend, g.Canvas
	if l.Max.X <= l.Min.X {
		return // no legend
	}
	if l.Min.X < c.Min.X || l.Min.Y < c.Min.Y || l.Max.X > c.Max.X || l.Max.Y > c.Max.Y {
		t.Errorf("%q: legend box %v outside the image %v", p.Title.Text, l, c)
	}
	for _, d := range data {
		for _, q := range d {
			x := g.Data.Min.X + vg.Length(q.X)*(g.Data.Max.X-g.Data.Min.X)
			y := g.Data.Min.Y + vg.Length(q.Y)*(g.Data.Max.Y-g.Data.Min.Y)
			if x >= l.Min.X && x <= l.Max.X && y >= l.Min.Y && y <= l.Max.Y {
				t.Errorf("%q: the legend at %v covers data at (%.0f, %.0f)", p.Title.Text, l, x, y)
				return
			}
		}
	}
}

// svgColour is a colour in gonum's SVG: a fill or stroke as #RRGGBB.
var svgColour = regexp.MustCompile(`(?:fill|stroke):#([0-9A-Fa-f]{6})`)

// checkPalette draws p as SVG and checks that every colour it uses is one of the
// Okabe–Ito palette's or a grey (black, white and the greys of axes and reference lines).
func checkPalette(t *testing.T, p *plot.Plot) {
	t.Helper()
	rendered, placed, drawn := chart.Rendered, chart.Placed, chart.Drawn
	chart.Rendered, chart.Placed, chart.Drawn = nil, nil, nil
	defer func() { chart.Rendered, chart.Placed, chart.Drawn = rendered, placed, drawn }()
	b, err := chart.Render(p, 7*vg.Inch, 4*vg.Inch, "svg")
	if err != nil {
		t.Fatalf("%q: %v", p.Title.Text, err)
	}
	for _, m := range svgColour.FindAllStringSubmatch(string(b), -1) {
		var r, g, b int
		fmt.Sscanf(m[1], "%02x%02x%02x", &r, &g, &b)
		if !paletteColour(r, g, b) {
			t.Errorf("%q: colour #%s is neither Okabe–Ito's nor a grey", p.Title.Text, m[1])
			return
		}
	}
}

// paletteColour reports whether r, g, b is a grey or, within the rounding of a translucent
// colour's channels, one of Okabe–Ito's.
func paletteColour(r, g, b int) bool {
	if r == g && g == b {
		return true
	}
	near := func(x int, y uint32) bool { return x-int(y>>8) <= 2 && int(y>>8)-x <= 2 }
	for _, c := range chart.OkabeIto {
		cr, cg, cb, _ := c.RGBA()
		if near(r, cr) && near(g, cg) && near(b, cb) {
			return true
		}
	}
	return false
}

// checkDrawn checks every figure rendered (checkFigure) and that its legend, if it has
// one, was placed by PlaceLegend, which checkPlaced checks and reports.
func checkDrawn(t *testing.T, rendered []*plot.Plot, checkPlaced func(*plot.Plot) bool) {
	t.Helper()
	if len(rendered) == 0 {
		t.Fatal("no figure drawn")
	}
	for _, p := range rendered {
		checkFigure(t, p)
		if !checkPlaced(p) && legendEntries(p) {
			t.Errorf("%q: legend not placed by PlaceLegend", p.Title.Text)
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
	checkYTicks(t, p)
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

// checkYTicks checks that p's y axis has at least four labelled ticks (a categorical axis
// of a strip plot, or a count of clients that spans fewer than four whole numbers,
// excepted) and that no label has a decimal to spare ("17.50").
func checkYTicks(t *testing.T, p *plot.Plot) {
	t.Helper()
	if _, ok := p.Y.Tick.Marker.(plot.ConstantTicks); ok {
		return
	}
	if _, ok := p.Y.Tick.Marker.(chart.IntTicks); ok && p.Y.Max-p.Y.Min < 3 {
		return
	}
	var labels []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if len(labels) < 4 {
		t.Errorf("%q: y axis labelled %v, want at least four ticks", p.Title.Text, labels)
	}
	spare := len(labels) > 0
	for _, l := range labels {
		spare = spare && strings.Contains(l, ".") && strings.HasSuffix(l, "0")
	}
	if spare {
		t.Errorf("%q: y labels %v all end in a zero decimal", p.Title.Text, labels)
	}
}

// checkLegend checks that a legend placed in corner c (fw × fh of the data area) covers
// none of data (data-area fractions), sampling every segment between two points.
func checkLegend(t *testing.T, p *plot.Plot, c chart.Corner, fw, fh float64, data []plotter.XYs) {
	t.Helper()
	if c == chart.Outside || c == chart.Below {
		return // outside the axes: checkGeometry checks it against the image and the data
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

// figureGrid draws a one-key sweep over learning rates (a factor 100: a log axis) of two
// members with two seeds.
func figureGrid(t *testing.T, dir string) error {
	t.Helper()
	cfg := filled(config.Config{Out: filepath.Dir(dir), Name: filepath.Base(dir), Seeds: []uint64{1, 2}, Suite: []string{"fedavg", "fedtp"},
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
		y := h[len(h)-1].Eval.Mean + 0.02*float64(i%2) + 0.03*float64(i%3)
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
