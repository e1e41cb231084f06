package data

import (
	"bytes"
	"slices"
	"testing"
)

func TestSynthetic(t *testing.T) {
	x := Synthetic("toy", 400, 3, 4, 5, 4, 7)
	if err := x.Validate(); err != nil || x.Name != "toy" || x.N != 400 || x.C != 3 || x.H != 4 || x.W != 5 || x.Classes != 4 {
		t.Fatalf("%v: %s %d×%d×%d×%d, %d classes", err, x.Name, x.N, x.C, x.H, x.W, x.Classes)
	}
	if y := Synthetic("toy", 400, 3, 4, 5, 4, 7); !bytes.Equal(x.Pixels, y.Pixels) || !slices.Equal(x.Labels, y.Labels) {
		t.Fatal("same seed, different data")
	}
	if y := Synthetic("toy", 400, 3, 4, 5, 4, 8); bytes.Equal(x.Pixels, y.Pixels) {
		t.Fatal("different seeds, same data")
	}
	// Labels are roughly uniform and each sample is nearest its own class's mean.
	d := x.C * x.H * x.W
	count := make([]int, x.Classes)
	mean := make([]float64, x.Classes*d)
	for i, l := range x.Labels {
		count[l]++
		for j := range d {
			mean[int(l)*d+j] += float64(x.Pixels[i*d+j])
		}
	}
	for k, n := range count {
		if n < 60 || n > 140 {
			t.Errorf("class %d has %d of 400 samples", k, n)
		}
		for j := range d {
			mean[k*d+j] /= float64(n)
		}
	}
	for i, l := range x.Labels {
		best, bestDist := -1, 0.0
		for k := range x.Classes {
			dist := 0.0
			for j := range d {
				v := float64(x.Pixels[i*d+j]) - mean[k*d+j]
				dist += v * v
			}
			if best < 0 || dist < bestDist {
				best, bestDist = k, dist
			}
		}
		if int64(best) != l {
			t.Fatalf("sample %d of class %d is nearest class %d's mean", i, l, best)
		}
	}
	if e := Synthetic("empty", 0, 1, 1, 1, 1, 0); e.N != 0 || len(e.Pixels) != 0 {
		t.Fatal("n = 0")
	}
}
