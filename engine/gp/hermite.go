package gp

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// HermitePoints is the number of Gauss–Hermite nodes of the predictive integral: 20, the
// default of gpytorch's GaussHermiteQuadrature1D that the official code uses.
const HermitePoints = 20

// Hermite is an n-point Gauss–Hermite rule: ∫ g(x)·exp(−x²) dx ≈ Σ_i W[i]·g(X[i]), exact
// for polynomials of degree < 2n.
type Hermite struct{ X, W []float64 }

// NewHermite computes the n-point rule by Golub and Welsch's method: the nodes are the
// eigenvalues of the symmetric tridiagonal Jacobi matrix of the (physicists') Hermite
// polynomials, off-diagonal √(k/2), and W[i] = √π·v_i[0]² with v_i the unit eigenvector.
func NewHermite(n int) (Hermite, error) {
	if n < 1 {
		return Hermite{}, fmt.Errorf("gp: a Gauss–Hermite rule needs at least one node, got %d", n)
	}
	j := mat.NewSymDense(n, nil)
	for k := 1; k < n; k++ {
		j.SetSym(k-1, k, math.Sqrt(float64(k)/2))
	}
	var eig mat.EigenSym
	if !eig.Factorize(j, true) {
		return Hermite{}, fmt.Errorf("gp: the %d-point Gauss–Hermite eigenproblem did not converge", n)
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	h := Hermite{X: make([]float64, n), W: make([]float64, n)}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return vals[order[a]] < vals[order[b]] })
	for i, o := range order {
		v := vecs.At(0, o)
		h.X[i], h.W[i] = vals[o], math.Sqrt(math.Pi)*v*v
	}
	// the rule is symmetric: make it exactly so (the eigensolver's nodes agree to rounding)
	for i := 0; i < n/2; i++ {
		x := (h.X[n-1-i] - h.X[i]) / 2
		w := (h.W[i] + h.W[n-1-i]) / 2
		h.X[i], h.X[n-1-i], h.W[i], h.W[n-1-i] = -x, x, w, w
	}
	if n%2 == 1 {
		h.X[n/2] = 0
	}
	return h, nil
}

// Gauss is E[g(f)] for f ~ N(mu, v): (1/√π)·Σ_i W[i]·g(mu + √(2v)·X[i]).
func (h Hermite) Gauss(mu, v float64, g func(float64) float64) float64 {
	s := math.Sqrt(2 * v)
	var sum float64
	for i, x := range h.X {
		sum += h.W[i] * g(mu+s*x)
	}
	return sum / math.Sqrt(math.Pi)
}

// Sigmoid is p = E[σ(f)] for f ~ N(mu, v) by the rule, with ∂p/∂mu and ∂p/∂v (v > 0).
func (h Hermite) Sigmoid(mu, v float64) (p, dMu, dV float64) {
	s := math.Sqrt(2 * v)
	var ds float64 // ∂p/∂s, s = √(2v)
	for i, x := range h.X {
		sg := sigmoid(mu + s*x)
		d := h.W[i] * sg * (1 - sg)
		p += h.W[i] * sg
		dMu += d
		ds += d * x
	}
	c := 1 / math.Sqrt(math.Pi)
	// ∂s/∂v = 1/s
	return p * c, dMu * c, ds * c / s
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
