package gp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

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
// code factorizes Σ̃ itself). Each chain draws from its own stream, seeded from r, and
// the chains run in parallel. It returns the last ω of every chain, [draws][n].
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
	seeds := make([][2]uint64, draws) // each chain's own stream, drawn first
	for d := range seeds {
		seeds[d] = [2]uint64{r.Uint64(), r.Uint64()}
	}
	omega := make([][]float64, draws)
	err := ForEach(draws, func(d int) error {
		rd := rand.New(rand.NewPCG(seeds[d][0], seeds[d][1]))
		f := priorDraw(&l, rd)
		omega[d] = make([]float64, n)
		for i := range omega[d] {
			omega[d][i] = PG1(rd, f.AtVec(i))
		}
		for step := 0; step < steps; step++ {
			f, err := conditional(k, &l, kap, omega[d], rd)
			if err != nil {
				return err
			}
			for i := range omega[d] {
				omega[d][i] = PG1(rd, f.AtVec(i))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return omega, nil
}

// ForEach runs f(0..n−1) on up to GOMAXPROCS goroutines and returns the first error (by
// index). The chains of a GP are independent, each with its own stream, so running them
// in parallel changes no result (pFedGP's clients likewise).
func ForEach(n int, f func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
	p := &Posterior{n: n, chol: make([]*mat.Cholesky, len(omega)), alpha: make([]*mat.VecDense, len(omega))}
	err := ForEach(len(omega), func(d int) error {
		c, err := noisy(k, omega[d])
		if err != nil {
			return err
		}
		a := mat.NewVecDense(n, nil)
		if err := c.SolveVecTo(a, zOf(kap, omega[d])); err != nil {
			return err
		}
		p.chol[d], p.alpha[d] = c, a
		return nil
	})
	if err != nil {
		return nil, err
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
	mean, variance = make([][]float64, len(p.chol)), make([][]float64, len(p.chol))
	err = ForEach(len(p.chol), func(d int) error {
		var v mat.Dense
		if err := p.chol[d].SolveTo(&v, ks); err != nil {
			return err
		}
		mu, q := kthMoments(ks, p.alpha[d], &v)
		for j := 0; j < m; j++ {
			q[j] = math.Max(kss[j]-q[j], minVar)
		}
		mean[d], variance[d] = mu, q
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return mean, variance, nil
}

// kthMoments returns K*ᵀα and the column sums of K* ∘ V (diag(K*ᵀV)) for ks [n, m].
func kthMoments(ks *mat.Dense, alpha *mat.VecDense, v *mat.Dense) (mu, q []float64) {
	n, m := ks.Dims()
	mu, q = make([]float64, m), make([]float64, m)
	for i := 0; i < n; i++ {
		kr, vr, ai := ks.RawRowView(i), v.RawRowView(i), alpha.AtVec(i)
		for j := 0; j < m; j++ {
			mu[j] += kr[j] * ai
			q[j] += kr[j] * vr[j]
		}
	}
	return mu, q
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
	return BalancedPredictiveLoss(h, ktt, kth, khh, omega, trainLeft, heldLeft, 1, 1)
}

// Balanced is the branch probability reweighted by the branches' prior ratios wLeft and
// wRight, p̃ = wLeft·p/(wLeft·p + wRight·(1 − p)), and dp̃/dp; equal weights leave p (and
// the derivative 1) exactly. pFedGP-IP conditions its GPs on inducing inputs whose branch
// proportions differ from the data's and corrects the predictive so: P(y | x) ∝
// (P(y)/Q(y))·Q(y | x), Q the proportions the GP was conditioned on, P the data's.
func Balanced(p, wLeft, wRight float64) (pt, dpt float64) {
	if wLeft == wRight {
		return p, 1
	}
	den := wLeft*p + wRight*(1-p)
	return wLeft * p / den, wLeft * wRight / (den * den)
}

// BalancedPredictiveLoss is PredictiveLoss with every held-out point's P(left | x) first
// reweighted by Balanced(·, wLeft, wRight) (weights > 0).
func BalancedPredictiveLoss(h Hermite, ktt *mat.SymDense, kth *mat.Dense, khh []float64, omega [][]float64, trainLeft, heldLeft []bool, wLeft, wRight float64) (loss float64, dKtt, dKth *mat.Dense, dKhh []float64, err error) {
	if !(wLeft > 0) || !(wRight > 0) {
		return 0, nil, nil, nil, fmt.Errorf("gp: predictive loss: branch weights %g and %g, want both > 0", wLeft, wRight)
	}
	n := ktt.SymmetricDim()
	_, m := kth.Dims()
	if len(trainLeft) != n || len(heldLeft) != m || len(khh) != m {
		return 0, nil, nil, nil, fmt.Errorf("gp: predictive loss: %d train labels for %d points, %d held-out labels and %d variances for %d", len(trainLeft), n, len(heldLeft), len(khh), m)
	}
	post, err := NewPosterior(ktt, trainLeft, omega)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	draws, err := predictiveDraws(h, post, kth, khh)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	nd := len(draws)
	p := make([]float64, m)
	for d := range draws {
		for j, pr := range draws[d].pr {
			p[j] += pr / float64(nd)
		}
	}
	dp := make([]float64, m) // ∂L/∂p_j
	for j := 0; j < m; j++ {
		pt, dpt := Balanced(p[j], wLeft, wRight)
		q, sign := pt, 1.0
		if !heldLeft[j] {
			q, sign = 1-pt, -1
		}
		loss -= math.Log(q+logEps) / float64(m)
		dp[j] = -sign / ((q + logEps) * float64(m)) * dpt
	}
	dKhh = make([]float64, m)
	for d := range draws {
		for j := 0; j < m; j++ {
			dKhh[j] += dp[j] * draws[d].dV[j] / float64(nd)
		}
	}
	dKtt, dKth = predictiveKernelGrads(post, draws, dp, n)
	return loss, dKtt, dKth, dKhh, nil
}

// predictiveDraw is one chain's predictive at the held-out points: V = A_d⁻¹ K_th, each
// point's P(left | x) and its derivatives with respect to the predictive mean and variance.
type predictiveDraw struct {
	v           mat.Dense
	dMu, dV, pr []float64
}

// predictiveDraws computes every draw's predictive at the held-out points (in parallel);
// a variance that rounds below minVar is clamped there, with no gradient.
func predictiveDraws(h Hermite, post *Posterior, kth *mat.Dense, khh []float64) ([]predictiveDraw, error) {
	_, m := kth.Dims()
	draws := make([]predictiveDraw, len(post.chol))
	err := ForEach(len(draws), func(d int) error {
		dr := &draws[d]
		if err := post.chol[d].SolveTo(&dr.v, kth); err != nil {
			return err
		}
		dr.dMu, dr.dV, dr.pr = make([]float64, m), make([]float64, m), make([]float64, m)
		mus, qs := kthMoments(kth, post.alpha[d], &dr.v)
		for j := 0; j < m; j++ {
			mu := mus[j]
			va := khh[j] - qs[j]
			clamped := va < minVar
			if clamped {
				va = minVar
			}
			pr, dm, dv := h.Sigmoid(mu, va)
			if clamped {
				dv = 0
			}
			dr.pr[j], dr.dMu[j], dr.dV[j] = pr, dm, dv
		}
		return nil
	})
	return draws, err
}

// predictiveKernelGrads is the loss's gradient with respect to K_tt (n × n) and K_th,
// given dp, its gradient with respect to every held-out point's mean probability over the
// chains: each chain's part computed in parallel, then summed in chain order, whatever ran
// first.
func predictiveKernelGrads(post *Posterior, draws []predictiveDraw, dp []float64, n int) (dKtt, dKth *mat.Dense) {
	nd, m := len(draws), len(dp)
	type grads struct{ tt, th *mat.Dense }
	per := make([]grads, nd)
	_ = ForEach(nd, func(d int) error {
		dr := &draws[d]
		alpha := post.alpha[d]
		a, b := make([]float64, m), make([]float64, m)
		for j := 0; j < m; j++ {
			a[j] = dp[j] * dr.dMu[j] / float64(nd)
			b[j] = dp[j] * dr.dV[j] / float64(nd)
		}
		av := mat.NewVecDense(m, a)
		va := mat.NewVecDense(n, nil)
		va.MulVec(&dr.v, av) // V a
		w := mat.NewDense(n, m, nil)
		for i := 0; i < n; i++ { // W = V diag(b)
			vr, wr := dr.v.RawRowView(i), w.RawRowView(i)
			for j := range wr {
				wr[j] = vr[j] * b[j]
			}
		}
		th := mat.NewDense(n, m, nil)
		th.Scale(-2, w)              // − 2 V diag(b)
		th.RankOne(th, 1, alpha, av) // + α aᵀ
		tt := mat.NewDense(n, n, nil)
		tt.Mul(w, dr.v.T())           // V diag(b) Vᵀ
		tt.RankOne(tt, -1, va, alpha) // − (V a) αᵀ
		per[d] = grads{tt, th}
		return nil
	})
	dKtt, dKth = per[0].tt, per[0].th
	for d := 1; d < nd; d++ {
		dKtt.Add(dKtt, per[d].tt)
		dKth.Add(dKth, per[d].th)
	}
	return dKtt, dKth
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
	lls := make([]float64, len(omega))
	per := make([]*mat.Dense, len(omega))
	err = ForEach(len(omega), func(d int) error {
		w := omega[d]
		c, err := noisy(k, w)
		if err != nil {
			return err
		}
		z := zOf(kap, w)
		alpha := mat.NewVecDense(n, nil)
		if err := c.SolveVecTo(alpha, z); err != nil {
			return err
		}
		ll := -0.5*mat.Dot(z, alpha) - 0.5*c.LogDet() - float64(n)*math.Log(2)
		for i, o := range w {
			o = math.Max(o, minOmega)
			ll += -0.5*math.Log(o) + 0.5*kap[i]*kap[i]/o
		}
		var inv mat.SymDense
		if err := c.InverseTo(&inv); err != nil {
			return err
		}
		g := mat.NewDense(n, n, nil)
		g.Copy(&inv)
		g.RankOne(g, -1, alpha, alpha)
		g.Scale(0.5/(float64(n)*nd), g)
		lls[d], per[d] = ll, g
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	dK = per[0]
	for d, ll := range lls { // summed in chain order
		loss -= ll / (float64(n) * nd)
		if d > 0 {
			dK.Add(dK, per[d])
		}
	}
	return loss, dK, nil
}

// sqrtMax is max(√v, 1e-12), the norm F.normalize divides by.
func sqrtMax(v float64) float64 { return math.Max(math.Sqrt(v), 1e-12) }
