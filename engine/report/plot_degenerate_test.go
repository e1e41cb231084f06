package report

import (
	"encoding/json"
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

// degenerateSeries are values a run can hand its figures: one round, values all equal (at
// a magnitude where gonum's own widening of the axis is lost in rounding too), values near
// the float64 limits, and non-finite ones.
var degenerateSeries = map[string][]float64{
	"one point":        {0.5},
	"two points":       {0.2, 0.6},
	"all equal":        {0.3, 0.3, 0.3},
	"equal and huge":   {3.8e25, 3.8e25},
	"equal and tiny":   {1e-320, 1e-320},
	"huge range":       {-1e300, 1e300},
	"beyond the limit": {1e308, -1e308, 0},
	"some non-finite":  {math.NaN(), math.Inf(1), 0.25, math.Inf(-1)},
	"all non-finite":   {math.NaN(), math.Inf(1)},
}

// degenerateHistory is a run of len(ys) rounds whose loss, accuracies and both clients'
// accuracies are ys.
func degenerateHistory(ys []float64) []fl.RoundMetrics {
	var h []fl.RoundMetrics
	for i, y := range ys {
		h = append(h, fl.RoundMetrics{Round: i, Clients: []int{0, 1}, TrainLoss: y, Samples: 4,
			Eval: &fl.EvalResult{Correct: []int{1, 1}, Count: []int{2, 2}, Accuracy: []float64{y, y}, Loss: []float64{y, y},
				Micro: y, Mean: y, Std: y}})
	}
	return h
}

// writeMetrics writes h as dir's metrics.jsonl.
func writeMetrics(t *testing.T, dir string, h []fl.RoundMetrics) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range h {
		line, err := json.Marshal(rundir.RoundLine(m))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEveryPlotSurvivesDegenerateSeries draws every figure pfl draws from a run's numbers
// (a run's curves, the comparison of runs, a grid's bands, sweeps and per-client plots, a
// suite's gain density and novel-client curves, a report's accuracy distribution, a
// t-SNE) over each degenerate series: none may fail, and where a value can be drawn the
// figure is there.
func TestEveryPlotSurvivesDegenerateSeries(t *testing.T) {
	placed := map[*plot.Plot][]plotter.XYs{}
	drawn := map[*plot.Plot]chart.Geometry{}
	chart.Placed = func(p *plot.Plot, _ chart.Corner, _, _ float64, data []plotter.XYs) { placed[p] = data }
	chart.Drawn = func(p *plot.Plot, g chart.Geometry) { drawn[p] = g }
	defer func() { chart.Placed, chart.Drawn = nil, nil }()
	for name, ys := range degenerateSeries {
		t.Run(name, func(t *testing.T) {
			clear(placed)
			clear(drawn)
			// every legend drawn inside its image and over none of its figure's data
			defer func() {
				for p, g := range drawn {
					checkGeometry(t, p, g, placed[p])
				}
			}()
			// accuracy figures draw percent: 100 × the value must be drawable
			drawable, percentDrawable := false, false
			for _, y := range ys {
				drawable = drawable || (!math.IsNaN(y) && math.Abs(y) <= 1e300)
				percentDrawable = percentDrawable || (!math.IsNaN(y) && math.Abs(100*y) <= 1e300)
			}
			wantIf := func(can bool, path string) {
				t.Helper()
				if _, err := os.Stat(path); can && err != nil {
					t.Errorf("no figure: %v", err)
				}
			}
			want := func(path string) { t.Helper(); wantIf(drawable, path) }
			wantPercent := func(path string) { t.Helper(); wantIf(percentDrawable, path) }
			h := degenerateHistory(ys)
			dir := t.TempDir()

			if err := RunFigures(dir, "run", h, nil); err != nil {
				t.Errorf("plots: %v", err)
			}
			want(filepath.Join(dir, "loss.png"))
			wantPercent(filepath.Join(dir, "accuracy.svg"))
			if last := ys[len(ys)-1]; !math.IsNaN(last) && math.Abs(100*last) <= 1e300 {
				want(filepath.Join(dir, "clients.png"))
			}

			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			writeMetrics(t, a, h)
			writeMetrics(t, b, h)
			if err := Compare(filepath.Join(dir, "compare.png"), []string{a, b}); err != nil {
				t.Errorf("Compare: %v", err)
			}
			wantPercent(filepath.Join(dir, "compare.png"))

			curve, _ := accuracyCurve(a)
			if err := drawBands(filepath.Join(dir, "bands.png"), "bands", []bandCurve{band("x", []plotter.XYs{curve, curve})}); err != nil {
				t.Errorf("drawBands: %v", err)
			}
			wantPercent(filepath.Join(dir, "bands.png"))

			final := h[len(h)-1].Eval.Accuracy
			runs := []Run{{Summary: rundir.Summary{Name: "local"}, Final: final}, {Summary: rundir.Summary{Name: "fedavg",
				Novel: []rundir.NovelSummary{{Tuned: "model", Micro: ys, Mean: ys, Std: ys}}}, Final: final}}
			if err := gainDensity(dir, runs); err != nil {
				t.Errorf("gainDensity: %v", err)
			}
			if err := novelPlot(dir, runs); err != nil {
				t.Errorf("novelPlot: %v", err)
			}
			wantPercent(filepath.Join(dir, "novel.png"))

			var lines []rundir.Line
			for _, m := range h {
				lines = append(lines, rundir.RoundLine(m))
			}
			one := &runData{cfg: config.Config{Name: "one"}, lines: lines}
			distribution([]*runData{one})
			distribution([]*runData{one, {cfg: config.Config{Name: "two"}, lines: lines}})

			degenerateGrid(t, ys)
			degenerateTSNE(t, ys)
		})
	}
}

// degenerateGrid draws a grid's figures (bands across two seeds, the sweep plots, the
// per-client plots) from runs whose metrics are ys.
func degenerateGrid(t *testing.T, ys []float64) {
	t.Helper()
	cfg := filled(config.Config{Out: t.TempDir(), Name: "g", Seeds: []uint64{1, 2},
		Sweep: []config.SweepAxis{{Key: "train.lr", Values: []string{"0.1", "0.2"}}}})
	cfg.Data.Dataset, cfg.Data.Clients, cfg.Train.Participation = "synthetic:300", 2, 1
	cg, err := config.NewGrid(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &gridRuns{Grid: cg}
	for i, l := range g.Runs {
		writeMetrics(t, l.Dir(), degenerateHistory(ys))
		y := ys[i%len(ys)]
		g.runs = append(g.runs, &rundir.Summary{Name: l.Config.Name, TailMean: y, FinalMean: y})
	}
	if err := g.plots(); err != nil {
		t.Errorf("grid plots: %v", err)
	}
	if err := g.clientPlots(); err != nil {
		t.Errorf("grid client plots: %v", err)
	}
}

// degenerateTSNE draws the t-SNE of three clients whose embeddings are ys (each row the
// series, so all three are equal: t-SNE's degenerate case).
func degenerateTSNE(t *testing.T, ys []float64) {
	t.Helper()
	dir := t.TempDir()
	cfg := filled(config.Config{Out: filepath.Dir(dir), Name: filepath.Base(dir)})
	if err := rundir.WriteJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("client,novel")
	for j := range ys {
		fmt.Fprintf(&b, ",z%d", j)
	}
	b.WriteString("\n")
	for c := 0; c < 3; c++ {
		fmt.Fprintf(&b, "%d,false", c)
		for _, y := range ys {
			fmt.Fprintf(&b, ",%g", y)
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "embeddings.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "partition.json"), []byte(`{"config": {"method": "iid"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// t-SNE itself refuses non-finite embeddings (a diverged run's); anything else must draw
	err := EmbeddingTSNE(dir)
	finite := true
	for _, y := range ys {
		finite = finite && !math.IsNaN(y) && !math.IsInf(y, 0)
	}
	if finite && err != nil || !finite && (err == nil || !strings.Contains(err.Error(), "non-finite")) {
		t.Errorf("EmbeddingTSNE: %v", err)
	}
}
