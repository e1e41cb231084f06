package analysis

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
)

// TSNEOptions are exact t-SNE's settings. Zero values take the defaults, those of van der
// Maaten's reference implementation and scikit-learn's exact method.
type TSNEOptions struct {
	Perplexity   float64 // default 30, capped at (n − 1)/3
	Iterations   int     // default 1000
	Exaggeration float64 // early exaggeration of P; default 12
	EarlyIters   int     // iterations exaggerated (with momentum 0.5, then 0.8); default 250
	LearningRate float64 // default max(n / Exaggeration / 4, 50), scikit-learn's "auto"
	Seed         uint64  // the initial layout's N(0, 10⁻⁴) draws
}

// TSNE embeds the n rows of x (n × d, row-major) in two dimensions with exact t-SNE (van
// der Maaten & Hinton, 2008): per row a binary search for the Gaussian precision whose
// conditional distribution has the given perplexity, the symmetrized joint P, a Student-t
// Q in the plane, and gradient descent on KL(P‖Q) with momentum, early exaggeration and
// per-coordinate adaptive gains (the reference implementation's delta-bar-delta). It
// returns n × 2 coordinates, row-major; the same input and seed give the same output.
func TSNE(x []float64, n, d int, o TSNEOptions) ([]float64, error) {
	if n < 2 || d < 1 || len(x) != n*d {
		return nil, fmt.Errorf("analysis: t-SNE of %d values as %d rows of %d", len(x), n, d)
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("analysis: t-SNE: a non-finite value")
		}
	}
	perp := cmp.Or(o.Perplexity, 30)
	perp = math.Min(perp, math.Max(float64(n-1)/3, 1))
	iters := cmp.Or(o.Iterations, 1000)
	exag := cmp.Or(o.Exaggeration, 12)
	early := cmp.Or(o.EarlyIters, 250)
	lr := cmp.Or(o.LearningRate, math.Max(float64(n)/exag/4, 50))

	p := Affinities(x, n, d, perp)
	for i := range p {
		p[i] *= exag
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x7473_6e65)) // "tsne"
	y := make([]float64, 2*n)
	for i := range y {
		y[i] = 1e-2 * r.NormFloat64()
	}
	upd, gains := make([]float64, 2*n), make([]float64, 2*n)
	for i := range gains {
		gains[i] = 1
	}
	grad := make([]float64, 2*n)
	num := make([]float64, n*n)
	for it := 0; it < iters; it++ {
		if it == early {
			for i := range p {
				p[i] /= exag
			}
		}
		momentum := 0.8
		if it < early {
			momentum = 0.5
		}
		// Student-t kernel and its normalization
		var z float64
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				dx, dy := y[2*i]-y[2*j], y[2*i+1]-y[2*j+1]
				k := 1 / (1 + dx*dx + dy*dy)
				num[i*n+j], num[j*n+i] = k, k
				z += 2 * k
			}
		}
		for i := range grad {
			grad[i] = 0
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i == j {
					continue
				}
				k := num[i*n+j]
				q := math.Max(k/z, 1e-12)
				f := 4 * (p[i*n+j] - q) * k
				grad[2*i] += f * (y[2*i] - y[2*j])
				grad[2*i+1] += f * (y[2*i+1] - y[2*j+1])
			}
		}
		for i := range y {
			if (grad[i] > 0) != (upd[i] > 0) {
				gains[i] += 0.2
			} else {
				gains[i] *= 0.8
			}
			gains[i] = math.Max(gains[i], 0.01)
			upd[i] = momentum*upd[i] - lr*gains[i]*grad[i]
			y[i] += upd[i]
		}
		// keep the layout centred
		var mx, my float64
		for i := 0; i < n; i++ {
			mx += y[2*i] / float64(n)
			my += y[2*i+1] / float64(n)
		}
		for i := 0; i < n; i++ {
			y[2*i] -= mx
			y[2*i+1] -= my
		}
	}
	return y, nil
}

// Affinities is t-SNE's joint distribution P (n × n, row-major): for each row i the
// conditional p(j|i) ∝ exp(−β_i‖x_i − x_j‖²), β_i found by bisection so that its
// perplexity e^H (H its entropy in nats) equals perp (to 10⁻⁵ in H, at most 200 steps), then
// p_ij = (p(j|i) + p(i|j)) / 2n, at least 10⁻¹².
func Affinities(x []float64, n, d int, perp float64) []float64 {
	cond := conditionals(x, n, d, perp)
	p := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				p[i*n+j] = math.Max((cond[i*n+j]+cond[j*n+i])/(2*float64(n)), 1e-12)
			}
		}
	}
	return p
}

// conditionals is p(j|i) for every row, each calibrated to perplexity perp.
func conditionals(x []float64, n, d int, perp float64) []float64 {
	dist := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			var s float64
			for k := 0; k < d; k++ {
				v := x[i*d+k] - x[j*d+k]
				s += v * v
			}
			dist[i*n+j], dist[j*n+i] = s, s
		}
	}
	cond := make([]float64, n*n)
	target := math.Log(perp)
	for i := 0; i < n; i++ {
		row := cond[i*n : (i+1)*n]
		beta, lo, hi := 1.0, math.Inf(-1), math.Inf(1)
		for step := 0; step < 200; step++ {
			h := conditional(dist[i*n:(i+1)*n], i, beta, row)
			if math.Abs(h-target) < 1e-5 {
				break
			}
			if h > target { // too flat: sharpen
				lo = beta
				if math.IsInf(hi, 1) {
					beta *= 2
				} else {
					beta = (beta + hi) / 2
				}
			} else {
				hi = beta
				if math.IsInf(lo, -1) {
					beta /= 2
				} else {
					beta = (beta + lo) / 2
				}
			}
		}
	}
	return cond
}

// conditional fills row with p(j|i) for precision beta over the squared distances dist
// (row i's), p(i|i) = 0, and returns its entropy in nats. Distances are shifted by their
// minimum so that the exponentials cannot all underflow.
func conditional(dist []float64, i int, beta float64, row []float64) float64 {
	dmin := math.Inf(1)
	for j, v := range dist {
		if j != i {
			dmin = math.Min(dmin, v)
		}
	}
	var sum, wsum float64
	for j, v := range dist {
		if j == i {
			row[j] = 0
			continue
		}
		row[j] = math.Exp(-beta * (v - dmin))
		sum += row[j]
		wsum += row[j] * (v - dmin)
	}
	for j := range row {
		row[j] /= sum
	}
	return math.Log(sum) + beta*wsum/sum
}

// KNNPurity is the fraction of the n points' k nearest neighbours (in y, n × dim,
// Euclidean) that share the point's label: 1 when every neighbourhood is pure.
func KNNPurity(y []float64, n, dim int, labels []int, k int) float64 {
	same, total := 0, 0
	idx := make([]int, 0, n)
	dist := make([]float64, n)
	for i := 0; i < n; i++ {
		idx = idx[:0]
		for j := 0; j < n; j++ {
			var s float64
			for c := 0; c < dim; c++ {
				v := y[i*dim+c] - y[j*dim+c]
				s += v * v
			}
			dist[j] = s
			if j != i {
				idx = append(idx, j)
			}
		}
		sortBy(idx, dist)
		for _, j := range idx[:min(k, len(idx))] {
			total++
			if labels[j] == labels[i] {
				same++
			}
		}
	}
	return float64(same) / float64(total)
}

func sortBy(idx []int, key []float64) {
	for a := 1; a < len(idx); a++ { // insertion sort: small n, stable
		for b := a; b > 0 && key[idx[b]] < key[idx[b-1]]; b-- {
			idx[b], idx[b-1] = idx[b-1], idx[b]
		}
	}
}
