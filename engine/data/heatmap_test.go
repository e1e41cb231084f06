package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"

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
