package gp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The closed forms of PG(1, c)'s mean and variance against the law's definition as an
// infinite sum of gammas, PG(1, c) = (1/(2π²))·Σ_k g_k/((k−½)² + c²/(4π²)) with
// g_k ~ Gamma(1, 1): E = (1/(2π²))·Σ_k 1/d_k and Var = (1/(4π⁴))·Σ_k 1/d_k², d_k the
// denominators. Summed to N terms; the tails are below (1/(2π²))/(N−½) and
// (1/(4π⁴))/(3(N−½)³) (the integrals of 1/(k−½)² and 1/(k−½)⁴ from N), the tolerances.
func TestPGMomentFormulas(t *testing.T) {
	const n = 2_000_000
	for _, c := range []float64{0, 1e-4, 0.5, 2, 10} {
		var mean, variance float64
		for k := n; k >= 1; k-- { // small terms first
			d := (float64(k)-0.5)*(float64(k)-0.5) + c*c/(4*math.Pi*math.Pi)
			mean += 1 / d
			variance += 1 / (d * d)
		}
		mean /= 2 * math.Pi * math.Pi
		variance /= 4 * math.Pi * math.Pi * math.Pi * math.Pi
		tailMean := 1 / (2 * math.Pi * math.Pi * (n - 0.5))
		tailVar := 1 / (4 * math.Pow(math.Pi, 4) * 3 * math.Pow(n-0.5, 3))
		if got := PGMean(c); math.Abs(got-mean) > tailMean+1e-12 {
			t.Errorf("PGMean(%g) = %.12g, series %.12g", c, got, mean)
		}
		if got := PGVar(c); math.Abs(got-variance) > tailVar+1e-12 {
			t.Errorf("PGVar(%g) = %.12g, series %.12g", c, got, variance)
		}
	}
}

// The sampler's mean of PG(1, c) matches tanh(c/2)/(2c) (1/4 at c = 0) within 4.5 standard
// errors √(Var/n) of the exact variance (a two-sided normal tail of 7e-6 per check), and
// its sample variance matches the exact one within 4.5 standard errors estimated from the
// sample's fourth central moment, √((m₄ − s⁴)/n).
func TestPGSamplerMoments(t *testing.T) {
	const n = 1_000_000
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []float64{0, 0.3, 1, 2.5, -4, 12, 40} {
		xs := make([]float64, n)
		var mean float64
		for i := range xs {
			xs[i] = PG1(r, c)
			if !(xs[i] > 0) {
				t.Fatalf("PG(1, %g) drew %g", c, xs[i])
			}
			mean += xs[i]
		}
		mean /= n
		var m2, m4 float64
		for _, x := range xs {
			d := x - mean
			m2 += d * d
			m4 += d * d * d * d
		}
		m2 /= n - 1
		m4 /= n
		want, wantVar := PGMean(c), PGVar(c)
		if se := math.Sqrt(wantVar / n); math.Abs(mean-want) > 4.5*se {
			t.Errorf("PG(1, %g): mean %.6g, want %.6g ± %.2g", c, mean, want, se)
		}
		if se := math.Sqrt((m4 - m2*m2) / n); math.Abs(m2-wantVar) > 4.5*se {
			t.Errorf("PG(1, %g): variance %.6g, want %.6g ± %.2g", c, m2, wantVar, se)
		}
	}
}
