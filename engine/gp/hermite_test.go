package gp

import (
	"math"
	"testing"
)

// The rule is exact for polynomials of degree < 2n: the Gaussian moments of degree 0 to 6
// against their closed forms, to rounding (1e-12 relative).
func TestHermiteMoments(t *testing.T) {
	h, err := NewHermite(HermitePoints)
	if err != nil {
		t.Fatal(err)
	}
	mu, v := 0.7, 2.3
	want := []float64{1, mu, mu*mu + v, mu*mu*mu + 3*mu*v, math.Pow(mu, 4) + 6*mu*mu*v + 3*v*v,
		math.Pow(mu, 5) + 10*math.Pow(mu, 3)*v + 15*mu*v*v,
		math.Pow(mu, 6) + 15*math.Pow(mu, 4)*v + 45*mu*mu*v*v + 15*v*v*v}
	for k, w := range want {
		got := h.Gauss(mu, v, func(x float64) float64 { return math.Pow(x, float64(k)) })
		if math.Abs(got-w) > 1e-12*math.Max(1, math.Abs(w)) {
			t.Errorf("E[f^%d] = %.15g, want %.15g", k, got, w)
		}
	}
}

// E[σ(f)] for f ~ N(μ, v): exactly ½ at μ = 0 by symmetry; elsewhere against a trapezoid
// sum of step 1e-3 over μ ± 12√v. The trapezoid rule on this smooth, Gaussian-decaying
// integrand is accurate far beyond 1e-10 (its error decays exponentially in 1/step, and
// the cut tails weigh below 1e-32). The n-point rule's error for an integrand analytic in
// a strip of half-width d around the real line decays like exp(−2d·√(2n)); in the rule's
// variable x, σ(μ + √(2v)·x) has its poles (at iπ(2k+1)) at distance d = π/√(2v): about
// 1e-12 at v = 1, 5e-5 at v = 8 and 9e-4 at v = 16. The tolerance is 10 times that
// estimate, plus 1e-10 for the reference. The derivatives against central differences
// (step 1e-5: truncation and rounding below 1e-8).
func TestHermiteSigmoid(t *testing.T) {
	h, _ := NewHermite(HermitePoints)
	if p, _, _ := h.Sigmoid(0, 3); math.Abs(p-0.5) > 1e-15 {
		t.Errorf("E[σ(f)] at μ = 0: %.17g", p)
	}
	for _, c := range []struct{ mu, v float64 }{{0.3, 0.01}, {-1.2, 0.5}, {2, 1}, {-0.5, 8}, {1, 16}} {
		s := math.Sqrt(c.v)
		tol := 10*math.Exp(-2*math.Pi/math.Sqrt(2*c.v)*math.Sqrt(2*HermitePoints)) + 1e-10
		const step = 1e-3
		var ref float64
		for x := c.mu - 12*s; x <= c.mu+12*s; x += step {
			ref += sigmoid(x) * math.Exp(-(x-c.mu)*(x-c.mu)/(2*c.v)) * step
		}
		ref /= math.Sqrt(2 * math.Pi * c.v)
		p, dmu, dv := h.Sigmoid(c.mu, c.v)
		if math.Abs(p-ref) > tol {
			t.Errorf("E[σ(f)], f ~ N(%g, %g): %.12g, numeric %.12g", c.mu, c.v, p, ref)
		}
		const e = 1e-5
		p1, _, _ := h.Sigmoid(c.mu+e, c.v)
		p0, _, _ := h.Sigmoid(c.mu-e, c.v)
		if fd := (p1 - p0) / (2 * e); math.Abs(fd-dmu) > 1e-8 {
			t.Errorf("∂p/∂μ at (%g, %g): %.10g, numeric %.10g", c.mu, c.v, dmu, fd)
		}
		p1, _, _ = h.Sigmoid(c.mu, c.v+e)
		p0, _, _ = h.Sigmoid(c.mu, c.v-e)
		if fd := (p1 - p0) / (2 * e); math.Abs(fd-dv) > 1e-8 {
			t.Errorf("∂p/∂v at (%g, %g): %.10g, numeric %.10g", c.mu, c.v, dv, fd)
		}
	}
}
