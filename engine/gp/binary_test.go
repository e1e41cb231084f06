package gp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

var testKernel = Kernel{OutputScale: 8, LengthScale: 1, Jitter: 1e-3}

// randFeatures draws n features of dimension d.
func randFeatures(r *rand.Rand, n, d int) [][]float64 {
	x := make([][]float64, n)
	for i := range x {
		x[i] = make([]float64, d)
		for j := range x[i] {
			x[i][j] = r.NormFloat64()
		}
	}
	return x
}

func seq(a, b int) []int {
	var out []int
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

// denseInverse is a general matrix's inverse, the reference's way (not Cholesky).
func denseInverse(t *testing.T, a mat.Matrix) *mat.Dense {
	t.Helper()
	var inv mat.Dense
	if err := inv.Inverse(a); err != nil {
		t.Fatal(err)
	}
	return &inv
}

// condition is the 2-norm condition number of a symmetric positive definite matrix.
func condition(t *testing.T, a *mat.SymDense) float64 {
	t.Helper()
	var e mat.EigenSym
	if !e.Factorize(a, false) {
		t.Fatal("eigen")
	}
	v := e.Values(nil)
	return v[len(v)-1] / v[0]
}

// One training point, one new point, by hand: A = k + 1/ω, μ* = k*·(κ/ω)/A and
// σ²* = k** − k*²/A.
func TestPosteriorOnePointByHand(t *testing.T) {
	k, ks, kss, w := 8.001, 3.0, 8.001, 0.2
	post, err := NewPosterior(mat.NewSymDense(1, []float64{k}), []bool{true}, [][]float64{{w}})
	if err != nil {
		t.Fatal(err)
	}
	mean, variance, err := post.Moments(mat.NewDense(1, 1, []float64{ks}), []float64{kss})
	if err != nil {
		t.Fatal(err)
	}
	a := k + 1/w
	if wantMu, wantVar := ks*(0.5/w)/a, kss-ks*ks/a; math.Abs(mean[0][0]-wantMu) > 1e-14 || math.Abs(variance[0][0]-wantVar) > 1e-14 {
		t.Fatalf("μ* %.17g σ²* %.17g, by hand %.17g %.17g", mean[0][0], variance[0][0], wantMu, wantVar)
	}
}

// The posterior of f given ω and the predictive at new points against the dense
// textbook forms with explicit inverses: Σ̃ = (K⁻¹ + Ω)⁻¹, μ̃ = Σ̃κ, and at new points
// μ* = K*ᵀK⁻¹μ̃, σ²* = k** − K*ᵀK⁻¹K* + K*ᵀK⁻¹Σ̃K⁻¹K* (the Gaussian posterior pushed
// through the prior's conditional; Posterior computes μ* = K*ᵀ(K + Ω⁻¹)⁻¹Ω⁻¹κ and
// σ²* = k** − K*ᵀ(K + Ω⁻¹)⁻¹K*, equal by Woodbury's identity). Inverting K loses about
// cond(K)·ε relative precision, so the tolerance is 100·cond(K)·ε times the values' scale
// (s = 8). The predictive probability against a trapezoid integral of each chain's
// Gaussian, within the quadrature's error estimate at the largest variance (hermite_test).
func TestPosteriorAgainstDense(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := Normalize(randFeatures(r, 9, 3))
	train, test := x[:6], x[6:]
	left := []bool{true, false, true, true, false, false}
	k := sub(testKernel.Cross(train, train), seq(0, 6), testKernel.Jitter)
	ks := testKernel.Cross(train, test)
	kss := []float64{8.001, 8.001, 8.001}
	omega := [][]float64{{0.2, 0.05, 0.11, 0.3, 0.02, 0.07}, {0.15, 0.25, 0.01, 0.09, 0.12, 0.2}}
	post, err := NewPosterior(k, left, omega)
	if err != nil {
		t.Fatal(err)
	}
	mean, variance, err := post.Moments(ks, kss)
	if err != nil {
		t.Fatal(err)
	}
	tol := 100 * condition(t, k) * 2.2e-16 * 8
	kinv := denseInverse(t, k)
	h, _ := NewHermite(HermitePoints)
	prob, err := post.ProbLeft(h, ks, kss)
	if err != nil {
		t.Fatal(err)
	}
	maxVar := 0.0
	refProb := make([]float64, 3)
	for d, w := range omega {
		prec := mat.NewDense(6, 6, nil)
		prec.Copy(kinv)
		for i, o := range w {
			prec.Set(i, i, prec.At(i, i)+o)
		}
		sigma := denseInverse(t, prec)
		muT := mat.NewVecDense(6, nil)
		muT.MulVec(sigma, mat.NewVecDense(6, kappa(left)))
		for j := 0; j < 3; j++ {
			kj := mat.NewVecDense(6, nil)
			kj.CopyVec(ks.ColView(j))
			a := mat.NewVecDense(6, nil)
			a.MulVec(kinv, kj) // K⁻¹k*
			mu := mat.Dot(a, muT)
			sa := mat.NewVecDense(6, nil)
			sa.MulVec(sigma, a)
			v := kss[j] - mat.Dot(kj, a) + mat.Dot(a, sa)
			if math.Abs(mean[d][j]-mu) > tol || math.Abs(variance[d][j]-v) > tol {
				t.Errorf("chain %d point %d: μ* %.12g σ²* %.12g, dense %.12g %.12g (tol %.1g)", d, j, mean[d][j], variance[d][j], mu, v, tol)
			}
			maxVar = math.Max(maxVar, v)
			// trapezoid of σ(f)·N(f; μ, v)
			s := math.Sqrt(v)
			var ref float64
			for f := mu - 12*s; f <= mu+12*s; f += 1e-3 * s {
				ref += sigmoid(f) * math.Exp(-(f-mu)*(f-mu)/(2*v)) * 1e-3 * s
			}
			refProb[j] += ref / math.Sqrt(2*math.Pi*v) / float64(len(omega))
		}
	}
	qtol := 10*math.Exp(-2*math.Pi/math.Sqrt(2*maxVar)*math.Sqrt(2*HermitePoints)) + 1e-9
	for j := range prob {
		if math.Abs(prob[j]-refProb[j]) > qtol {
			t.Errorf("P(left | x*_%d) = %.10g, numeric %.10g (tol %.1g)", j, prob[j], refProb[j], qtol)
		}
	}
}

// The Gibbs step's draw of f | ω against its law N(Σ̃κ, Σ̃) (dense reference as above):
// 40,000 draws, the sample mean within 4.5 standard errors √(Σ̃_ii/n) and the sample
// covariance within 4.5 standard errors √((Σ̃_ii Σ̃_jj + Σ̃_ij²)/n) (the Gaussian's).
func TestConditionalDraw(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := Normalize(randFeatures(r, 4, 3))
	k := sub(testKernel.Cross(x, x), seq(0, 4), testKernel.Jitter)
	left := []bool{true, false, false, true}
	omega := []float64{0.2, 0.05, 0.3, 0.12}
	var ck mat.Cholesky
	ck.Factorize(k)
	var l mat.TriDense
	ck.LTo(&l)
	prec := denseInverse(t, k)
	for i, o := range omega {
		prec.Set(i, i, prec.At(i, i)+o)
	}
	sigma := denseInverse(t, prec)
	mu := mat.NewVecDense(4, nil)
	mu.MulVec(sigma, mat.NewVecDense(4, kappa(left)))
	const n = 40_000
	draws := make([]*mat.VecDense, n)
	mean := make([]float64, 4)
	for s := range draws {
		f, err := conditional(k, &l, kappa(left), omega, r)
		if err != nil {
			t.Fatal(err)
		}
		draws[s] = f
		for i := range mean {
			mean[i] += f.AtVec(i) / n
		}
	}
	for i := range mean {
		if se := math.Sqrt(sigma.At(i, i) / n); math.Abs(mean[i]-mu.AtVec(i)) > 4.5*se {
			t.Errorf("E[f_%d] %.5g, want %.5g ± %.2g", i, mean[i], mu.AtVec(i), se)
		}
		for j := 0; j <= i; j++ {
			var c float64
			for _, f := range draws {
				c += (f.AtVec(i) - mean[i]) * (f.AtVec(j) - mean[j]) / (n - 1)
			}
			se := math.Sqrt((sigma.At(i, i)*sigma.At(j, j) + sigma.At(i, j)*sigma.At(i, j)) / n)
			if math.Abs(c-sigma.At(i, j)) > 4.5*se {
				t.Errorf("Cov[f_%d, f_%d] %.5g, want %.5g ± %.2g", i, j, c, sigma.At(i, j), se)
			}
		}
	}
}

// fdTol is the tolerance of a central difference of step 1e-5 against an analytic
// derivative: its truncation error h²·|∂³L|/6 is below 1e-8 for third derivatives up to
// 600, and rounding adds ε·|L|/h ≈ 1e-11; 1e-6·(1 + |g|) leaves room for both.
func fdTol(g float64) float64 { return 1e-6 * (1 + math.Abs(g)) }

// PredictiveLoss's gradients against central differences of its value, every kernel
// entry perturbed (the training block symmetrically: the two mirrored entries together,
// whose derivative is G_ik + G_ki).
func TestPredictiveLossGradient(t *testing.T) {
	// equal weights are PredictiveLoss; unequal ones add Balanced's chain factor
	for _, w := range [][2]float64{{1, 1}, {3, 0.5}} {
		t.Run("", func(t *testing.T) { predictiveLossGradient(t, w[0], w[1]) })
	}
}

func predictiveLossGradient(t *testing.T, wl, wr float64) {
	r := rand.New(rand.NewPCG(7, 8))
	h, _ := NewHermite(HermitePoints)
	x := Normalize(randFeatures(r, 8, 3))
	g := testKernel.Cross(x, x)
	tr, he := []int{0, 1, 2, 3, 4}, []int{5, 6, 7}
	trL, heL := []bool{true, false, true, false, true}, []bool{false, true, true}
	omega := [][]float64{{0.2, 0.05, 0.11, 0.3, 0.02}, {0.15, 0.25, 0.01, 0.09, 0.12}}
	ktt, kth := sub(g, tr, testKernel.Jitter), block(g, tr, he)
	khh := []float64{8.001, 8.001, 8.001}
	loss := func(ktt *mat.SymDense, kth *mat.Dense, khh []float64) float64 {
		l, _, _, _, err := BalancedPredictiveLoss(h, ktt, kth, khh, omega, trL, heL, wl, wr)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l0, dtt, dth, dhh, err := BalancedPredictiveLoss(h, ktt, kth, khh, omega, trL, heL, wl, wr)
	if err != nil || !(l0 > 0) {
		t.Fatal(l0, err)
	}
	const e = 1e-5
	for i := range tr {
		for k := i; k < len(tr); k++ {
			p, m := mat.NewSymDense(5, nil), mat.NewSymDense(5, nil)
			p.CopySym(ktt)
			m.CopySym(ktt)
			p.SetSym(i, k, ktt.At(i, k)+e)
			m.SetSym(i, k, ktt.At(i, k)-e)
			fd := (loss(p, kth, khh) - loss(m, kth, khh)) / (2 * e)
			want := dtt.At(i, k) + dtt.At(k, i)
			if i == k {
				want = dtt.At(i, i)
			}
			if math.Abs(fd-want) > fdTol(want) {
				t.Errorf("∂L/∂Ktt[%d,%d] %.10g, numeric %.10g", i, k, want, fd)
			}
		}
		for j := range he {
			p, m := mat.DenseCopyOf(kth), mat.DenseCopyOf(kth)
			p.Set(i, j, kth.At(i, j)+e)
			m.Set(i, j, kth.At(i, j)-e)
			if fd := (loss(ktt, p, khh) - loss(ktt, m, khh)) / (2 * e); math.Abs(fd-dth.At(i, j)) > fdTol(dth.At(i, j)) {
				t.Errorf("∂L/∂K*[%d,%d] %.10g, numeric %.10g", i, j, dth.At(i, j), fd)
			}
		}
	}
	for j := range he {
		p, m := slices.Clone(khh), slices.Clone(khh)
		p[j] += e
		m[j] -= e
		if fd := (loss(ktt, kth, p) - loss(ktt, kth, m)) / (2 * e); math.Abs(fd-dhh[j]) > fdTol(dhh[j]) {
			t.Errorf("∂L/∂k**[%d] %.10g, numeric %.10g", j, dhh[j], fd)
		}
	}
}

// MarginalLoss against the dense form (explicit inverse and determinant, tolerance
// 100·cond(A)·ε relative) and its gradient against central differences.
func TestMarginalLoss(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x := Normalize(randFeatures(r, 5, 3))
	k := sub(testKernel.Cross(x, x), seq(0, 5), testKernel.Jitter)
	left := []bool{true, false, true, false, false}
	omega := [][]float64{{0.2, 0.05, 0.11, 0.3, 0.02}, {0.15, 0.25, 0.01, 0.09, 0.12}}
	l0, dk, err := MarginalLoss(k, omega, left)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	kap := kappa(left)
	for _, w := range omega {
		a := mat.NewSymDense(5, nil)
		a.CopySym(k)
		z := mat.NewVecDense(5, nil)
		for i, o := range w {
			a.SetSym(i, i, a.At(i, i)+1/o)
			z.SetVec(i, kap[i]/o)
		}
		az := mat.NewVecDense(5, nil)
		az.MulVec(denseInverse(t, a), z)
		ll := -0.5*mat.Dot(z, az) - 0.5*math.Log(mat.Det(a)) - 5*math.Log(2)
		for i, o := range w {
			ll += -0.5*math.Log(o) + 0.5*kap[i]*kap[i]/o
		}
		want -= ll / 10
	}
	if math.Abs(l0-want) > 100*condition(t, k)*2.2e-16*math.Abs(want) {
		t.Errorf("marginal loss %.15g, dense %.15g", l0, want)
	}
	const e = 1e-5
	for i := 0; i < 5; i++ {
		for j := i; j < 5; j++ {
			p, m := mat.NewSymDense(5, nil), mat.NewSymDense(5, nil)
			p.CopySym(k)
			m.CopySym(k)
			p.SetSym(i, j, k.At(i, j)+e)
			m.SetSym(i, j, k.At(i, j)-e)
			lp, _, _ := MarginalLoss(p, omega, left)
			lm, _, _ := MarginalLoss(m, omega, left)
			fd := (lp - lm) / (2 * e)
			g := dk.At(i, j) + dk.At(j, i)
			if i == j {
				g = dk.At(i, i)
			}
			if math.Abs(fd-g) > fdTol(g) {
				t.Errorf("∂L/∂K[%d,%d] %.10g, numeric %.10g", i, j, g, fd)
			}
		}
	}
}

// A batch's loss through its plan, as a function of the raw features: the kernel-space
// gradient contracted with the kernel's Jacobian (FeatureGrad, what autograd does on the
// device) against central differences in every feature coordinate, with the plan (tree,
// splits, ω) fixed; both objectives.
func TestPlanFeatureGradient(t *testing.T) {
	h, _ := NewHermite(HermitePoints)
	for _, obj := range []Objective{Predictive, Marginal} {
		r := rand.New(rand.NewPCG(11, 12))
		cfg := Config{Kernel: Kernel{OutputScale: 4, LengthScale: 0.8, Jitter: 1e-3}, Draws: 3, Steps: 2, Objective: obj, PredictRatio: 0.5, Restarts: 5}
		feat := randFeatures(r, 12, 4)
		y := []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}
		plan, err := NewPlan(cfg, feat, y, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.nodes) != 2 {
			t.Fatalf("objective %d: %d nodes with a loss, want 2 (three classes)", obj, len(plan.nodes))
		}
		l0, g, err := plan.Eval(cfg, h, feat)
		if err != nil || !(l0 > 0) {
			t.Fatal(l0, err)
		}
		grad := cfg.Kernel.FeatureGrad(feat, g)
		const e = 1e-5
		for i := range feat {
			for d := range feat[i] {
				v := feat[i][d]
				feat[i][d] = v + e
				lp, _, _ := plan.Eval(cfg, h, feat)
				feat[i][d] = v - e
				lm, _, _ := plan.Eval(cfg, h, feat)
				feat[i][d] = v
				if fd := (lp - lm) / (2 * e); math.Abs(fd-grad[i][d]) > fdTol(grad[i][d]) {
					t.Errorf("objective %d: ∂L/∂x[%d][%d] %.10g, numeric %.10g", obj, i, d, grad[i][d], fd)
				}
			}
		}
	}
}

// The whole sampler against the exact posterior of a two-point problem. Training points
// x1 (left) and x2 (right) with kernel K; the exact predictive at x* is
//
//	P(left | x*, y) = ∫ E[σ(f*) | f] p(f | y) df,  p(f | y) ∝ N(f; 0, K)·σ(f1)·σ(−f2),
//
// with f* | f Gaussian (mean k*ᵀK⁻¹f, variance k** − k*ᵀK⁻¹k*), computed on a 600×600
// grid over ±7 prior standard deviations (the cut mass is below 1e-11, and the rule on
// this smooth integrand is far more accurate than the Monte Carlo tolerance). Gibbs runs
// 20,000 independent chains of 30 sweeps; each chain's Rao-Blackwellized P(left | x*, ω_d)
// is an unbiased draw of the predictive once the chain has mixed, so their mean must lie
// within 4.5 standard errors (their sample standard deviation over √20,000) of the exact
// value.
func TestGibbsPredictiveAgainstExactPosterior(t *testing.T) {
	kern := Kernel{OutputScale: 2, LengthScale: 1, Jitter: 1e-3}
	x := Normalize([][]float64{{1, 0.2}, {0.3, 1}, {0.9, 0.6}})
	g := kern.Cross(x, x)
	k := sub(g, []int{0, 1}, kern.Jitter)
	ks := block(g, []int{0, 1}, []int{2})
	kss := []float64{g.At(2, 2) + kern.Jitter}
	left := []bool{true, false}
	h, _ := NewHermite(HermitePoints)

	// exact, on the grid
	kinv := denseInverse(t, k)
	kk := mat.NewVecDense(2, []float64{ks.At(0, 0), ks.At(1, 0)})
	wv := mat.NewVecDense(2, nil)
	wv.MulVec(kinv, kk) // K⁻¹k*
	condVar := kss[0] - mat.Dot(kk, wv)
	const n = 600
	lim := 7 * math.Sqrt(k.At(0, 0))
	step := 2 * lim / n
	var num, den float64
	for i := 0; i <= n; i++ {
		f1 := -lim + float64(i)*step
		for j := 0; j <= n; j++ {
			f2 := -lim + float64(j)*step
			q := kinv.At(0, 0)*f1*f1 + 2*kinv.At(0, 1)*f1*f2 + kinv.At(1, 1)*f2*f2
			w := math.Exp(-q/2) * sigmoid(f1) * sigmoid(-f2)
			pr, _, _ := h.Sigmoid(wv.AtVec(0)*f1+wv.AtVec(1)*f2, condVar)
			num += w * pr
			den += w
		}
	}
	exact := num / den

	const chains = 20_000
	omega, err := Gibbs(k, left, chains, 30, rand.New(rand.NewPCG(21, 22)))
	if err != nil {
		t.Fatal(err)
	}
	post, err := NewPosterior(k, left, omega)
	if err != nil {
		t.Fatal(err)
	}
	mean, variance, err := post.Moments(ks, kss)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sum2 float64
	for d := range mean {
		p, _, _ := h.Sigmoid(mean[d][0], variance[d][0])
		sum += p
		sum2 += p * p
	}
	m := sum / chains
	se := math.Sqrt((sum2/chains - m*m) / chains)
	if math.Abs(m-exact) > 4.5*se {
		t.Fatalf("Gibbs predictive %.5f ± %.5f, exact %.5f", m, se, exact)
	}
	t.Logf("Gibbs predictive %.5f ± %.5f, exact %.5f", m, se, exact)
}
