package experiment

import "testing"

// TestEpochsToConverge: the first epoch from which the curve stays within the tolerance
// of its last value, whatever happens before it.
func TestEpochsToConverge(t *testing.T) {
	for _, c := range []struct {
		name   string
		acc    []float64
		within float64
		want   int
	}{
		{"empty", nil, 0.01, 0},
		{"flat from the start", []float64{0.8, 0.8, 0.8}, 0.01, 0},
		{"rises then settles", []float64{0.2, 0.6, 0.795, 0.8, 0.797}, 0.01, 2},
		{"still rising at the end", []float64{0.2, 0.4, 0.6}, 0.01, 2},
		{"a dip after settling restarts the count", []float64{0.2, 0.8, 0.7, 0.8}, 0.01, 3},
		{"a dip inside the tolerance does not", []float64{0.2, 0.8, 0.795, 0.8}, 0.01, 1},
		{"overshoot, then settle below it", []float64{0.2, 0.9, 0.85, 0.85}, 0.01, 2},
		{"zero tolerance", []float64{0.5, 0.7, 0.7}, 0, 1},
	} {
		if got := epochsToConverge(c.acc, c.within); got != c.want {
			t.Errorf("%s: %v within %g: %d, want %d", c.name, c.acc, c.within, got, c.want)
		}
	}
}
