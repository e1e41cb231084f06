package gp

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Kernel is the covariance of every node's GP: the RBF kernel on L2-normalized features,
// k(a, b) = s·exp(−‖â − b̂‖²/(2ℓ²)) = s·exp((â·b̂ − 1)/ℓ²), plus Jitter on the diagonal of
// every covariance of a sample with itself, as the official code's gpytorch
// ScaleKernel(RBFKernel) with add_jitter. The mean is zero (the official ConstantMean
// starts at zero and is never trained: the GPs are rebuilt every round and the optimizer
// holds only the network's parameters; so are s and ℓ, which stay at their initial values).
type Kernel struct {
	OutputScale float64 // s; the official default 8
	LengthScale float64 // ℓ; the official default 1
	Jitter      float64 // the official 1e-3
}

// Normalize returns each row divided by max(‖row‖, 1e-12), as torch's F.normalize.
func Normalize(x [][]float64) [][]float64 {
	out := make([][]float64, len(x))
	for i, row := range x {
		var n float64
		for _, v := range row {
			n += v * v
		}
		n = sqrtMax(n)
		out[i] = make([]float64, len(row))
		for j, v := range row {
			out[i][j] = v / n
		}
	}
	return out
}

// Cross is the kernel between normalized rows a and b, without jitter: [len(a), len(b)].
func (k Kernel) Cross(a, b [][]float64) *mat.Dense {
	out := mat.NewDense(max(len(a), 1), max(len(b), 1), nil)
	if len(a) == 0 || len(b) == 0 {
		return out
	}
	l2 := k.LengthScale * k.LengthScale
	for i, x := range a {
		for j, y := range b {
			var dot float64
			for d := range x {
				dot += x[d] * y[d]
			}
			out.Set(i, j, k.OutputScale*math.Exp((dot-1)/l2))
		}
	}
	return out
}

// sub is the symmetric submatrix of g on rows and columns idx, plus jitter on its diagonal.
func sub(g *mat.Dense, idx []int, jitter float64) *mat.SymDense {
	s := mat.NewSymDense(len(idx), nil)
	for i, a := range idx {
		for j := i; j < len(idx); j++ {
			v := g.At(a, idx[j])
			if i == j {
				v += jitter
			}
			s.SetSym(i, j, v)
		}
	}
	return s
}

// block is g's rows rows and columns cols.
func block(g *mat.Dense, rows, cols []int) *mat.Dense {
	out := mat.NewDense(len(rows), len(cols), nil)
	for i, a := range rows {
		for j, b := range cols {
			out.Set(i, j, g.At(a, b))
		}
	}
	return out
}

// kappa is κ_i = y_i − ½ of the binary likelihood σ(f)^y (1 − σ(f))^(1−y): +½ for a sample
// of the node's left branch (y = 1: P(left | f) = σ(f)), −½ for the right branch.
func kappa(left []bool) []float64 {
	k := make([]float64, len(left))
	for i, l := range left {
		k[i] = -0.5
		if l {
			k[i] = 0.5
		}
	}
	return k
}

// minOmega keeps 1/ω finite: the official code clamps ω at 1e-16 (1e-32 in one place).
const minOmega = 1e-16

// noisy is A = K + Ω⁻¹ (Ω = diag(ω)) factorized.
func noisy(k *mat.SymDense, omega []float64) (*mat.Cholesky, error) {
	n := k.SymmetricDim()
	a := mat.NewSymDense(n, nil)
	a.CopySym(k)
	for i, w := range omega {
		a.SetSym(i, i, a.At(i, i)+1/math.Max(w, minOmega))
	}
	var c mat.Cholesky
	if !c.Factorize(a) {
		return nil, fmt.Errorf("gp: K + Ω⁻¹ (%d×%d) is not positive definite", n, n)
	}
	return &c, nil
}

// zOf is z = Ω⁻¹κ, the Gaussian pseudo-observations of the augmented likelihood.
func zOf(kap, omega []float64) *mat.VecDense {
	z := mat.NewVecDense(len(kap), nil)
	for i, k := range kap {
		z.SetVec(i, k/math.Max(omega[i], minOmega))
	}
	return z
}

// Gibbs samples the Pólya-Gamma augmented posterior of a binary GP with prior N(0, K) (K
// with its jitter) and labels left (P(left | f) = σ(f)): draws parallel chains, each
// started at f from the prior and ω ~ PG(1, f), then steps sweeps of
//
//	f | ω, y ~ N(Σ̃κ, Σ̃),  Σ̃ = (K⁻¹ + Ω)⁻¹ = K − K(K + Ω⁻¹)⁻¹K,
//	ω_i | f ~ PG(1, f_i),
//
// as the official code (10 or 5 steps of 20 or 30 chains). f is drawn by pathwise
// conditioning: f = f₀ + K(K + Ω⁻¹)⁻¹(Ω⁻¹κ − f₀ − ε) with f₀ ~ N(0, K) and ε ~ N(0, Ω⁻¹),
// which has exactly that law and needs only the factors of K and K + Ω⁻¹ (the official
// code factorizes Σ̃ itself). It returns the last ω of every chain, [draws][n].
func Gibbs(k *mat.SymDense, left []bool, draws, steps int, r *rand.Rand) ([][]float64, error) {
	n := k.SymmetricDim()
	if n != len(left) {
		return nil, fmt.Errorf("gp: %d labels for a %d×%d kernel", len(left), n, n)
	}
	var ck mat.Cholesky
	if !ck.Factorize(k) {
		return nil, fmt.Errorf("gp: the kernel matrix (%d×%d) is not positive definite", n, n)
	}
	var l mat.TriDense
	ck.LTo(&l)
	kap := kappa(left)
	omega := make([][]float64, draws)
	for d := range omega {
		f := priorDraw(&l, r)
		omega[d] = make([]float64, n)
		for i := range omega[d] {
			omega[d][i] = PG1(r, f.AtVec(i))
		}
	}
	for step := 0; step < steps; step++ {
		for d := range omega {
			f, err := conditional(k, &l, kap, omega[d], r)
			if err != nil {
				return nil, err
			}
			for i := range omega[d] {
				omega[d][i] = PG1(r, f.AtVec(i))
			}
		}
	}
	return omega, nil
}

// priorDraw is f ~ N(0, K) = L·ε, L the lower Cholesky factor of K.
func priorDraw(l *mat.TriDense, r *rand.Rand) *mat.VecDense {
	n, _ := l.Dims()
	e := mat.NewVecDense(n, nil)
	for i := 0; i < n; i++ {
		e.SetVec(i, r.NormFloat64())
	}
	e.MulVec(l, e)
	return e
}

// conditional draws f | ω, y ~ N(Σ̃κ, Σ̃) by pathwise conditioning: the posterior of f
// under the Gaussian pseudo-observations z = Ω⁻¹κ with noise N(0, Ω⁻¹) is that law, and
// f₀ + K(K + Ω⁻¹)⁻¹(z − f₀ − ε), f₀ ~ N(0, K), ε ~ N(0, Ω⁻¹), is a draw of it.
func conditional(k *mat.SymDense, l *mat.TriDense, kap, omega []float64, r *rand.Rand) (*mat.VecDense, error) {
	n := len(kap)
	a, err := noisy(k, omega)
	if err != nil {
		return nil, err
	}
	f0 := priorDraw(l, r)
	v := zOf(kap, omega)
	for i := 0; i < n; i++ {
		eps := r.NormFloat64() / math.Sqrt(math.Max(omega[i], minOmega))
		v.SetVec(i, v.AtVec(i)-f0.AtVec(i)-eps)
	}
	u := mat.NewVecDense(n, nil)
	if err := a.SolveVecTo(u, v); err != nil {
		return nil, fmt.Errorf("gp: gibbs: %w", err)
	}
	f := mat.NewVecDense(n, nil)
	f.MulVec(k, u)
	f.AddVec(f, f0)
	return f, nil
}

// Posterior is a binary GP conditioned on its training samples through the chains' ω:
// per chain d the factor of A_d = K + Ω_d⁻¹ and α_d = A_d⁻¹Ω_d⁻¹κ. Given ω_d the
// posterior of f at new points is Gaussian (the augmented likelihood is):
//
//	μ*_d = K*ᵀ α_d,   σ²*_d = k** − diag(K*ᵀ A_d⁻¹ K*),
//
// with K* the kernel between training and new points and k** the new points' variances.
type Posterior struct {
	chol  []*mat.Cholesky
	alpha []*mat.VecDense
	n     int
}

// NewPosterior conditions a GP of prior covariance k on labels left through the chains'
// omega ([draws][n], from Gibbs).
func NewPosterior(k *mat.SymDense, left []bool, omega [][]float64) (*Posterior, error) {
	n := k.SymmetricDim()
	kap := kappa(left)
	p := &Posterior{n: n}
	for _, w := range omega {
		c, err := noisy(k, w)
		if err != nil {
			return nil, err
		}
		a := mat.NewVecDense(n, nil)
		if err := c.SolveVecTo(a, zOf(kap, w)); err != nil {
			return nil, err
		}
		p.chol, p.alpha = append(p.chol, c), append(p.alpha, a)
	}
	return p, nil
}

// minVar is the smallest predictive variance: σ²* = k** − K*ᵀA⁻¹K* can round below zero
// when a new point sits on a training point (the official code then adds jitter to its
// diagonal covariance until it factorizes); the clamp makes such a point's variance
// 1e-10 and its gradient through the variance zero.
const minVar = 1e-10

// Moments returns μ*_d and σ²*_d of every chain d at new points, given ks [n, m] and kss
// [m] (with jitter).
func (p *Posterior) Moments(ks *mat.Dense, kss []float64) (mean, variance [][]float64, err error) {
	_, m := ks.Dims()
	var v mat.Dense
	for d, c := range p.chol {
		if err := c.SolveTo(&v, ks); err != nil {
			return nil, nil, err
		}
		mu, va := make([]float64, m), make([]float64, m)
		for j := 0; j < m; j++ {
			var s, q float64
			for i := 0; i < p.n; i++ {
				kij := ks.At(i, j)
				s += kij * p.alpha[d].AtVec(i)
				q += kij * v.At(i, j)
			}
			mu[j], va[j] = s, math.Max(kss[j]-q, minVar)
		}
		mean, variance = append(mean, mu), append(variance, va)
	}
	return mean, variance, nil
}

// ProbLeft is P(left | x*) = (1/D)·Σ_d E_{N(μ*_d, σ²*_d)}[σ(f)] at new points: the
// predictive averaged over the chains, each chain's Gaussian integral by Gauss–Hermite
// quadrature.
func (p *Posterior) ProbLeft(h Hermite, ks *mat.Dense, kss []float64) ([]float64, error) {
	mean, variance, err := p.Moments(ks, kss)
	if err != nil {
		return nil, err
	}
	_, m := ks.Dims()
	out := make([]float64, m)
	for d := range mean {
		for j := range out {
			pr, _, _ := h.Sigmoid(mean[d][j], variance[d][j])
			out[j] += pr / float64(len(mean))
		}
	}
	return out, nil
}

// logEps is what the official CE_loss adds inside the log: −log(p + 1e-12).
const logEps = 1e-12

// PredictiveLoss is one node's predictive loss: the mean over held-out points j of
// −log(q_j + 1e-12), q_j the predictive probability of j's branch (P(left | x_j) or one
// minus it, ProbLeft) given the training points through the chains' omega. It returns the
// loss and its gradient with respect to the kernel blocks it reads: ktt [n, n] (the
// training covariance, with jitter), kth [n, m] and khh [m] (the held-out points'
// variances). With a_dj = ∂L/∂μ*_dj, b_dj = ∂L/∂σ²*_dj and V_d = A_d⁻¹K*:
//
//	∂L/∂K*  = Σ_d α_d a_dᵀ − 2·V_d diag(b_d)
//	∂L/∂Ktt = Σ_d −(V_d a_d) α_dᵀ + V_d diag(b_d) V_dᵀ
//	∂L/∂k** = Σ_d b_d
//
// (the adjoints of μ* = K*ᵀA⁻¹z and σ²* = k** − diag(K*ᵀA⁻¹K*) through A = Ktt + Ω⁻¹, the
// matrix reverse mode through A's Cholesky factor gives; ω is a sample and carries no
// gradient, as in the official code, which draws it with numpy). Gradients are with
// respect to each entry as an independent input; contracted with a symmetric kernel's
// entries they give the exact derivative.
func PredictiveLoss(h Hermite, ktt *mat.SymDense, kth *mat.Dense, khh []float64, omega [][]float64, trainLeft, heldLeft []bool) (loss float64, dKtt, dKth *mat.Dense, dKhh []float64, err error) {
	n := ktt.SymmetricDim()
	_, m := kth.Dims()
	if len(trainLeft) != n || len(heldLeft) != m || len(khh) != m {
		return 0, nil, nil, nil, fmt.Errorf("gp: predictive loss: %d train labels for %d points, %d held-out labels and %d variances for %d", len(trainLeft), n, len(heldLeft), len(khh), m)
	}
	post, err := NewPosterior(ktt, trainLeft, omega)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	nd := len(omega)
	type draw struct {
		v           mat.Dense
		dMu, dV, pr []float64
	}
	draws := make([]draw, nd)
	p := make([]float64, m)
	for d, c := range post.chol {
		dr := &draws[d]
		if err := c.SolveTo(&dr.v, kth); err != nil {
			return 0, nil, nil, nil, err
		}
		dr.dMu, dr.dV, dr.pr = make([]float64, m), make([]float64, m), make([]float64, m)
		for j := 0; j < m; j++ {
			var mu, q float64
			for i := 0; i < n; i++ {
				mu += kth.At(i, j) * post.alpha[d].AtVec(i)
				q += kth.At(i, j) * dr.v.At(i, j)
			}
			va := khh[j] - q
			clamped := va < minVar
			if clamped {
				va = minVar
			}
			pr, dm, dv := h.Sigmoid(mu, va)
			if clamped {
				dv = 0
			}
			dr.pr[j], dr.dMu[j], dr.dV[j] = pr, dm, dv
			p[j] += pr / float64(nd)
		}
	}
	dp := make([]float64, m) // ∂L/∂p_j
	for j := 0; j < m; j++ {
		q, sign := p[j], 1.0
		if !heldLeft[j] {
			q, sign = 1-p[j], -1
		}
		loss -= math.Log(q+logEps) / float64(m)
		dp[j] = -sign / ((q + logEps) * float64(m))
	}
	dKtt, dKth, dKhh = mat.NewDense(n, n, nil), mat.NewDense(n, m, nil), make([]float64, m)
	a, b := make([]float64, m), make([]float64, m)
	va := mat.NewVecDense(n, nil)
	for d := range draws {
		dr := &draws[d]
		alpha := post.alpha[d]
		for j := 0; j < m; j++ {
			a[j] = dp[j] * dr.dMu[j] / float64(nd)
			b[j] = dp[j] * dr.dV[j] / float64(nd)
			dKhh[j] += b[j]
		}
		va.MulVec(&dr.v, mat.NewVecDense(m, a)) // V a
		for i := 0; i < n; i++ {
			for j := 0; j < m; j++ {
				dKth.Set(i, j, dKth.At(i, j)+alpha.AtVec(i)*a[j]-2*dr.v.At(i, j)*b[j])
			}
			for k := 0; k < n; k++ {
				var s float64
				for j := 0; j < m; j++ {
					s += dr.v.At(i, j) * b[j] * dr.v.At(k, j)
				}
				dKtt.Set(i, k, dKtt.At(i, k)-va.AtVec(i)*alpha.AtVec(k)+s)
			}
		}
	}
	return loss, dKtt, dKth, dKhh, nil
}

// MarginalLoss is one node's negative augmented marginal likelihood per sample, as the
// official code's marginal_log_likelihood: with z_d = Ω_d⁻¹κ and A_d = K + Ω_d⁻¹,
//
//	log p(y | ω_d) = log N(z_d; 0, A_d) + (n/2)·log 2π − ½Σ log ω_d + ½Σ κ²/ω_d − n·log 2,
//	L = −(1/(n·D))·Σ_d log p(y | ω_d),
//
// and its gradient ∂L/∂K = (1/(n·D))·Σ_d ½(A_d⁻¹ − α_d α_dᵀ), α_d = A_d⁻¹z_d (only the
// Gaussian term depends on K; by Fisher's identity the expectation over the posterior
// samples ω of this gradient is the marginal likelihood's).
func MarginalLoss(k *mat.SymDense, omega [][]float64, left []bool) (loss float64, dK *mat.Dense, err error) {
	n := k.SymmetricDim()
	kap := kappa(left)
	nd := float64(len(omega))
	dK = mat.NewDense(n, n, nil)
	var inv mat.SymDense
	for _, w := range omega {
		c, err := noisy(k, w)
		if err != nil {
			return 0, nil, err
		}
		z := zOf(kap, w)
		alpha := mat.NewVecDense(n, nil)
		if err := c.SolveVecTo(alpha, z); err != nil {
			return 0, nil, err
		}
		ll := -0.5*mat.Dot(z, alpha) - 0.5*c.LogDet() - float64(n)*math.Log(2)
		for i, o := range w {
			o = math.Max(o, minOmega)
			ll += -0.5*math.Log(o) + 0.5*kap[i]*kap[i]/o
		}
		loss -= ll / (float64(n) * nd)
		if err := c.InverseTo(&inv); err != nil {
			return 0, nil, err
		}
		s := 0.5 / (float64(n) * nd)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				dK.Set(i, j, dK.At(i, j)+s*(inv.At(i, j)-alpha.AtVec(i)*alpha.AtVec(j)))
			}
		}
	}
	return loss, dK, nil
}

// sqrtMax is max(√v, 1e-12), the norm F.normalize divides by.
func sqrtMax(v float64) float64 { return math.Max(math.Sqrt(v), 1e-12) }
