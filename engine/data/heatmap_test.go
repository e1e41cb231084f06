package data

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"pfl/engine/internal/chart"
)

// TestHeatmapSurvivesDegenerateCounts draws the partition heatmap of one client and one
// class, of counts all zero or all equal, and of counts near the int limits.
func TestHeatmapSurvivesDegenerateCounts(t *testing.T) {
	for name, counts := range map[string][][]int{
		"one cell":    {{5}},
		"one empty":   {{0}},
		"all zero":    {{0, 0}, {0, 0}},
		"all equal":   {{7, 7, 7}, {7, 7, 7}},
		"one client":  {{1, 2, 3}},
		"one class":   {{1}, {2}, {3}},
		"huge counts": {{1 << 62, 0}, {1, 1 << 62}},
	} {
		t.Run(name, func(t *testing.T) {
			m := Manifest{Dataset: "x", Classes: len(counts[0]), TrainCount: counts}
			path := filepath.Join(t.TempDir(), "partition.png")
			if err := m.Heatmap(path); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(path); err != nil || st.Size() == 0 {
				t.Fatalf("no heatmap: %v", err)
			}
		})
	}
}

// TestHeatmapNamesItsPartition: the heatmap's title names Dirichlet's α or the
// pathological split's classes per client, its axes are labelled, and a colour bar with a
// label is drawn beside it. With PFL_FIGURES set to a folder the heatmaps are kept there.
func TestHeatmapNamesItsPartition(t *testing.T) {
	var main, side *plot.Plot
	chart.Rendered = func(p, s *plot.Plot) { main, side = p, s }
	defer func() { chart.Rendered = nil }()
	counts := [][]int{{50, 0, 3, 9}, {0, 40, 12, 1}, {7, 7, 30, 0}, {1, 60, 0, 4}, {20, 2, 2, 20}, {0, 0, 45, 8}}
	for _, tc := range []struct {
		cfg  PartitionConfig
		want string
	}{
		{PartitionConfig{Method: MethodDirichlet, Alpha: 0.1}, "α = 0.1"},
		{PartitionConfig{Method: MethodPathological, ClassesPerClient: 2}, "2 classes per client"},
		{PartitionConfig{Method: MethodIID}, "iid"},
	} {
		dir := t.TempDir()
		if keep := os.Getenv("PFL_FIGURES"); keep != "" {
			dir = keep
		}
		m := Manifest{Dataset: "synthetic", Classes: 4, TrainCount: counts, Config: tc.cfg}
		if err := m.Heatmap(filepath.Join(dir, "partition-"+string(tc.cfg.Method)+".png")); err != nil {
			t.Fatal(err)
		}
		if main == nil || !strings.Contains(main.Title.Text, tc.want) {
			t.Errorf("%s: title %q, want it to name %q", tc.cfg.Method, main.Title.Text, tc.want)
		}
		if main.X.Label.Text == "" || main.Y.Label.Text == "" {
			t.Errorf("%s: axis label missing", tc.cfg.Method)
		}
		if side == nil || side.Y.Label.Text == "" {
			t.Errorf("%s: no labelled colour bar", tc.cfg.Method)
		}
	}
}

// TestHeatmapWhiteAtZero: a cell with no sample is white, a cell of one sample beside a
// large count is not (one large cell must not wash the small ones out to blank), larger
// counts are darker, and the colour bar's label keeps clear of its tick labels.
func TestHeatmapWhiteAtZero(t *testing.T) {
	var side *plot.Plot
	var g chart.Geometry
	chart.Rendered = func(_, s *plot.Plot) { side = s }
	chart.Drawn = func(_ *plot.Plot, got chart.Geometry) { g = got }
	defer func() { chart.Rendered, chart.Drawn = nil, nil }()
	counts := [][]int{{0, 1}, {30, 1000}} // [client][class]
	m := Manifest{Dataset: "x", Classes: 2, TrainCount: counts, Config: PartitionConfig{Method: MethodDirichlet, Alpha: 0.3}}
	path := filepath.Join(t.TempDir(), "partition.png")
	if err := m.Heatmap(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	scale := float64(b.Dx()) / float64(g.Canvas.Max.X-g.Canvas.Min.X)
	lum := func(client, class int) float64 { // the luminance at the cell's centre
		x := float64(g.Data.Min.X) + (float64(client)+0.5)/2*float64(g.Data.Max.X-g.Data.Min.X)
		y := float64(g.Data.Min.Y) + (float64(class)+0.5)/2*float64(g.Data.Max.Y-g.Data.Min.Y)
		r, gr, bl, _ := img.At(int(x*scale), b.Max.Y-1-int(y*scale)).RGBA()
		return (0.2126*float64(r) + 0.7152*float64(gr) + 0.0722*float64(bl)) / 65535
	}
	if l := lum(0, 0); l < 0.999 {
		t.Errorf("a cell of 0 samples has luminance %.3f, want white", l)
	}
	one, thirty, most := lum(0, 1), lum(1, 0), lum(1, 1)
	if one > 0.95 || !(one > thirty && thirty > most) {
		t.Errorf("luminance of 1, 30 and 1000 samples: %.3f, %.3f, %.3f; want 1 visibly tinted and darker with more", one, thirty, most)
	}
	if side == nil || side.Y.Label.Padding < vg.Points(6) {
		t.Error("the colour bar's label is not padded clear of its tick labels")
	}
}
