package report

import (
	"math"
	"testing"
)

// TestDensityCurve: the kernel density integrates to 1 over its grid (it spans ±3h beyond
// the data, where a Gaussian kernel leaves 2·0.00135 of its mass outside, and the
// trapezoid rule on 2,000 points errs by far less), peaks at the data's centre for
// symmetric data, and uses Silverman's bandwidth (checked through the peak height of a
// single point: 1/(h√(2π)) with h = 1 for one point).
func TestDensityCurve(t *testing.T) {
	for _, xs := range [][]float64{{-3, -1, 0, 0.5, 2, 7}, {5, 5, 5}, {1}} {
		d := densityCurve(xs, 2000, math.Inf(-1), math.Inf(1))
		var area float64
		for i := 1; i < len(d); i++ {
			area += (d[i].X - d[i-1].X) * (d[i].Y + d[i-1].Y) / 2
		}
		if math.Abs(area-1) > 0.003 {
			t.Errorf("%v: area %g, want 1 within 0.003", xs, area)
		}
	}
	d := densityCurve([]float64{-2, -1, 0, 1, 2}, 2001, math.Inf(-1), math.Inf(1))
	peak := d[0]
	for _, p := range d {
		if p.Y > peak.Y {
			peak = p
		}
	}
	if math.Abs(peak.X) > 1e-9 {
		// h = 0.9·min(σ = 1.58, IQR/1.34 = 1.49)·5^(-1/5) ≈ 0.97 ≈ the spacing: one mode at 0
		t.Errorf("peak at %g, want 0", peak.X)
	}
	one := densityCurve([]float64{4}, 3, math.Inf(-1), math.Inf(1))
	if want := 1 / math.Sqrt(2*math.Pi); math.Abs(one[1].Y-want) > 1e-12 || one[1].X != 4 {
		t.Errorf("single point: density %g at %g, want %g at 4", one[1].Y, one[1].X, want)
	}
}
