// Package gp is pFedGP's per-client Gaussian-process classifier on the host, in float64
// (Achituve, Shamsian, Navon, Chechik and Fetaya, "Personalized Federated Learning with
// Gaussian Processes", NeurIPS 2021): a binary tree over a client's classes, split by
// 2-means on the class-mean features, with a binary GP classifier at every inner node whose
// logistic likelihood is made conditionally Gaussian by Pólya-Gamma augmentation (Polson,
// Scott and Windle, JASA 2013) and whose posterior is sampled by Gibbs sampling.
//
// The GPs of one client are tiny (a batch's samples while training, its training set at
// evaluation), so they are computed here with gonum's dense Cholesky factorizations. The
// parts that the training loss differentiates come back as the gradient of the loss with
// respect to the kernel matrix (∂L/∂K, the adjoint that reverse mode through the Cholesky
// factor produces), which the caller contracts with a kernel computed by autograd ops.
package gp

import (
	"math"
	"math/rand/v2"
)

// pgTrunc is t in Devroye's method: the point where the sampler switches from the
// alternating series of the left tail to the one of the right tail (0.64, the value
// Polson et al. derive as optimal).
const pgTrunc = 0.64

// PG1 draws ω ~ PG(1, c), the Pólya-Gamma distribution with b = 1, exactly by Devroye's
// method as Polson, Scott and Windle (2013) give it for b = 1: PG(1, c) is
// J*(1, |c|/2)/4, and J*(1, z) is drawn by von Neumann's alternating-series rejection from
// a proposal that is a truncated exponential right of t = 0.64 and a truncated inverse
// Gaussian IG(1/z, 1) left of it. The series' coefficients a_n(x) are the left- or
// right-tail expansions of the J* density; no truncation of an infinite sum is involved,
// the draw is exact. E[ω] = tanh(c/2)/(2c) (1/4 at c = 0).
func PG1(r *rand.Rand, c float64) float64 {
	z := math.Abs(c) / 2
	k := math.Pi*math.Pi/8 + z*z/2
	pExp := massTruncExp(z, k)
	for {
		var x float64
		if r.Float64() < pExp {
			x = pgTrunc + r.ExpFloat64()/k
		} else {
			x = truncInvGauss(r, z)
		}
		s := pgA(0, x)
		y := r.Float64() * s
		for n := 1; ; n++ {
			if n%2 == 1 {
				s -= pgA(n, x)
				if y <= s {
					return x / 4
				}
			} else {
				s += pgA(n, x)
				if y > s {
					break // rejected: draw a new proposal
				}
			}
		}
	}
}

// pgA is the n-th coefficient of the alternating series of the J*(1, ·) density, in
// Polson et al.'s piecewise form: for x > t the right-tail form
// π(n+½)·exp(−(n+½)²π²x/2), for 0 < x ≤ t the left-tail form π(n+½)·(2/(πx))^{3/2}·
// exp(−2(n+½)²/x).
func pgA(n int, x float64) float64 {
	k := (float64(n) + 0.5) * math.Pi
	if x > pgTrunc {
		return k * math.Exp(-0.5*k*k*x)
	}
	if x <= 0 {
		return 0
	}
	h := float64(n) + 0.5
	return math.Exp(math.Log(k) - 1.5*(math.Log(0.5*math.Pi)+math.Log(x)) - 2*h*h/x)
}

// massTruncExp is p/(p + q), the probability of the exponential part of the proposal:
// p = π/(2K)·exp(−Kt) is its mass and q = 2·exp(−z)·F_IG(t | 1/z, 1) the inverse
// Gaussian part's, F_IG(t | μ, 1) = Φ((t/μ − 1)/√t) + exp(2/μ)·Φ(−(t/μ + 1)/√t); q/p is
// computed in logs so that large z does not overflow.
func massTruncExp(z, k float64) float64 {
	t := pgTrunc
	b := (t*z - 1) / math.Sqrt(t)
	a := -(t*z + 1) / math.Sqrt(t)
	x0 := math.Log(k) + k*t
	qOverP := 4 / math.Pi * (math.Exp(x0-z+logPhi(b)) + math.Exp(x0+z+logPhi(a)))
	return 1 / (1 + qOverP)
}

// logPhi is log Φ(x), the standard normal's log CDF.
func logPhi(x float64) float64 {
	return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
}

// truncInvGauss draws from IG(μ = 1/z, λ = 1) truncated to (0, t): for μ > t by
// rejection from the truncated Lévy (z = 0) proposal t/(1 + t·E)² accepted with
// probability exp(−z²x/2); otherwise by Michael, Schucany and Haas's IG sampler repeated
// until the draw falls below t, as Polson et al. describe.
func truncInvGauss(r *rand.Rand, z float64) float64 {
	t := pgTrunc
	if z < 1/t { // μ = 1/z > t
		for {
			var e1, e2 float64
			for {
				e1, e2 = r.ExpFloat64(), r.ExpFloat64()
				if e1*e1 <= 2*e2/t {
					break
				}
			}
			x := 1 + e1*t
			x = t / (x * x)
			if r.Float64() <= math.Exp(-0.5*z*z*x) {
				return x
			}
		}
	}
	mu := 1 / z
	for {
		y := r.NormFloat64()
		y *= y
		muY := mu * y
		x := mu + 0.5*mu*muY - 0.5*mu*math.Sqrt(4*muY+muY*muY)
		if r.Float64() > mu/(mu+x) {
			x = mu * mu / x
		}
		if x < t {
			return x
		}
	}
}

// PGMean is E[PG(1, c)] = tanh(c/2)/(2c), 1/4 at c = 0.
func PGMean(c float64) float64 {
	if math.Abs(c) < 1e-6 {
		return 0.25 - c*c/48 // the series 1/4 − c²/48 + O(c⁴)
	}
	return math.Tanh(c/2) / (2 * c)
}

// PGVar is Var[PG(1, c)] = (sinh c − c)/(4c³ cosh²(c/2)), 1/24 at c = 0.
func PGVar(c float64) float64 {
	if math.Abs(c) < 1e-3 {
		return 1.0/24 - c*c/120 // the series 1/24 − c²/120 + O(c⁴)
	}
	ch := math.Cosh(c / 2)
	return (math.Sinh(c) - c) / (4 * c * c * c * ch * ch)
}
