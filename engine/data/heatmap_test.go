package data

import (
	"os"
	"path/filepath"
	"testing"
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
