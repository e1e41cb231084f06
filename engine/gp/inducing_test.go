package gp

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// denseProbLeft is the reference predictive of a binary GP conditioned on training rows
// train (labels left) through the chains' omega, at new rows test: per chain the dense
// posterior of f at the training rows (explicit inverses: Σ̃ = (K⁻¹ + Ω)⁻¹, μ̃ = Σ̃κ), its
// Gaussian conditional at each new row (μ* = k*ᵀK⁻¹μ̃, σ²* = k** − k*ᵀK⁻¹k* +
// k*ᵀK⁻¹Σ̃K⁻¹k*), and ∫σ(f)N(f; μ*, σ²*)df by a trapezoid over ±12σ; averaged over the
// chains. It returns the probabilities and the largest variance (for the quadrature's
// error bound).
func denseProbLeft(t *testing.T, k Kernel, train [][]float64, left []bool, omega [][]float64, test [][]float64) ([]float64, float64) {
	t.Helper()
	n := len(train)
	kt := sub(k.Cross(train, train), seq(0, n), k.Jitter)
	ks := k.Cross(train, test)
	kinv := denseInverse(t, kt)
	out := make([]float64, len(test))
	maxVar := 0.0
	for _, w := range omega {
		prec := mat.NewDense(n, n, nil)
		prec.Copy(kinv)
		for i, o := range w {
			prec.Set(i, i, prec.At(i, i)+o)
		}
		sigma := denseInverse(t, prec)
		muT := mat.NewVecDense(n, nil)
		muT.MulVec(sigma, mat.NewVecDense(n, kappa(left)))
		for j := range test {
			kj := mat.NewVecDense(n, nil)
			kj.CopyVec(ks.ColView(j))
			a := mat.NewVecDense(n, nil)
			a.MulVec(kinv, kj)
			mu := mat.Dot(a, muT)
			sa := mat.NewVecDense(n, nil)
			sa.MulVec(sigma, a)
			v := k.OutputScale + k.Jitter - mat.Dot(kj, a) + mat.Dot(a, sa)
			maxVar = math.Max(maxVar, v)
			sd := math.Sqrt(v)
			var ref float64
			for f := mu - 12*sd; f <= mu+12*sd; f += 1e-3 * sd {
				ref += sigmoid(f) * math.Exp(-(f-mu)*(f-mu)/(2*v)) * 1e-3 * sd
			}
			out[j] += ref / math.Sqrt(2*math.Pi*v) / float64(len(omega))
		}
	}
	return out, maxVar
}

// inducingProblem is a tiny two-class client: 5 samples (1 of class 3, 4 of class 7) in 3
// dimensions, and 3 inducing inputs per class.
func inducingProblem() (feat [][]float64, y []int, ind [][]float64, indY []int) {
	r := rand.New(rand.NewPCG(11, 12))
	feat, ind = randFeatures(r, 5, 3), randFeatures(r, 6, 3)
	return feat, []int{3, 7, 7, 7, 7}, ind, []int{3, 3, 3, 7, 7, 7}
}

// The error bounds of the dense comparisons: the GP's linear algebra loses about
// cond(K)·ε relative precision (K the conditioning set's kernel, at most 6 + 5 rows with
// outputscale 8; its condition number is below 1e5 here, measured by condition), so
// 100·1e5·ε·8 ≈ 2e-9 on the moments, and a probability moves at most by ¼ of its mean's
// error; the quadrature's error at variance ≤ 8 is below
// 10·exp(−2π/√(2·8)·√(2·20)) ≈ 5e-4 (hermite_test's bound); the trapezoid's is far below.
// The probabilities are compared within 1e-3.
const inducingTol = 1e-3

// pFedGP-IP-data's training loss against the dense reference: at the one inner node the
// GP is conditioned on the 6 inducing inputs alone (through the plan's chains), every
// sample is held out, its branch probability is reweighted by the samples' branch counts
// over the inducing inputs' (1 : 4 here against 3 : 3), and the loss is the mean
// cross-entropy; its value within inducingTol relative (−log moves by at most
// Δp/min(p, 1 − p)).
func TestInducingLossAgainstDense(t *testing.T) {
	feat, y, ind, indY := inducingProblem()
	h, _ := NewHermite(HermitePoints)
	cfg := Config{Kernel: testKernel, Draws: 3, Steps: 2, Objective: Predictive, PredictRatio: 0.5, Restarts: 3}
	p, err := NewInducingPlan(cfg, feat, y, ind, indY, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.nodes) != 1 {
		t.Fatalf("%d inner nodes, want 1", len(p.nodes))
	}
	n := p.nodes[0]
	if len(n.train) != 6 || len(n.held) != 5 {
		t.Fatalf("conditioned on %d rows with %d held out, want the 6 inducing inputs and the 5 samples", len(n.train), len(n.held))
	}
	x := Normalize(append(append([][]float64{}, feat...), ind...))
	var train, held [][]float64
	for _, s := range n.train {
		if s < len(feat) {
			t.Fatalf("row %d (a sample) conditions the GP", s)
		}
		train = append(train, x[s])
	}
	for _, s := range n.held {
		held = append(held, x[s])
	}
	if c := condition(t, sub(testKernel.Cross(train, train), seq(0, 6), testKernel.Jitter)); c > 1e5 {
		t.Fatalf("condition number %g above the tolerance's assumption", c)
	}
	pl, _ := denseProbLeft(t, testKernel, train, n.trainLeft, n.omega, held)
	dl, dr := count(n.heldLeft)
	wl, wr := float64(dl)/5/(3.0/6), float64(dr)/5/(3.0/6)
	var want float64
	for j, pr := range pl {
		pt := wl * pr / (wl*pr + wr*(1-pr))
		if !n.heldLeft[j] {
			pt = 1 - pt
		}
		want -= math.Log(pt+1e-12) / float64(len(pl))
	}
	got, g, err := p.Eval(cfg, h, append(append([][]float64{}, feat...), ind...))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > inducingTol*want {
		t.Errorf("loss %.8g, dense %.8g", got, want)
	}
	if r, c := g.Dims(); r != 11 || c != 11 {
		t.Errorf("gradient %d×%d, want 11×11 (samples and inducing inputs)", r, c)
	}
	// the samples' mutual kernel entries are read by no node
	for i := 0; i < 5; i++ {
		for k := 0; k < 5; k++ {
			if i != k && g.At(i, k) != 0 {
				t.Errorf("∂L/∂K[%d,%d] = %g between two samples, want 0", i, k, g.At(i, k))
			}
		}
	}
}

// pFedGP-IP-data's evaluation classifier against the dense reference: conditioned on the
// samples and the inducing inputs together (11 rows), its chains as FitInducing draws them
// (the same seed: the tree's 2-means first, then the node's Gibbs chains), at 4 new points,
// with the correction of the samples' branch counts over the conditioning set's.
func TestFitInducingAgainstDense(t *testing.T) {
	feat, y, ind, indY := inducingProblem()
	h, _ := NewHermite(HermitePoints)
	cfg := Config{Kernel: testKernel, Draws: 3, Steps: 2, Objective: Predictive, PredictRatio: 0.5, Restarts: 3}
	c, err := FitInducing(cfg, h, feat, y, ind, indY, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	test := randFeatures(rand.New(rand.NewPCG(13, 14)), 4, 3)
	got, err := c.Predict(test, 10)
	if err != nil {
		t.Fatal(err)
	}
	// the reference's chains, from the same stream
	r := rand.New(rand.NewPCG(5, 6))
	tree := Tree(feat, y, cfg.Restarts, r)
	ally := append(append([]int{}, y...), indY...)
	x := Normalize(append(append([][]float64{}, feat...), ind...))
	idx, left := members(tree, ally)
	if len(idx) != 11 {
		t.Fatalf("the node holds %d rows, want 11", len(idx))
	}
	omega, err := Gibbs(sub(testKernel.Cross(x, x), idx, testKernel.Jitter), left, cfg.Draws, cfg.Steps, r)
	if err != nil {
		t.Fatal(err)
	}
	var train [][]float64
	for _, s := range idx {
		train = append(train, x[s])
	}
	pl, _ := denseProbLeft(t, testKernel, train, left, omega, Normalize(test))
	// samples: 1 of class 3, 4 of class 7; conditioning set: 4 and 7
	pL, qL := 1.0/5, 4.0/11
	if tree.Left.Classes[0] != 3 {
		pL, qL = 4.0/5, 7.0/11
	}
	wl, wr := pL/qL, (1-pL)/(1-qL)
	for j, pr := range pl {
		want := wl * pr / (wl*pr + wr*(1-pr))
		l, rt := tree.Left.Classes[0], tree.Right.Classes[0]
		if math.Abs(got[j][l]-want) > inducingTol || math.Abs(got[j][rt]-(1-want)) > inducingTol {
			t.Errorf("point %d: P(%d) %.6g, P(%d) %.6g; dense %.6g, %.6g", j, l, got[j][l], rt, got[j][rt], want, 1-want)
		}
		for cl := range got[j] {
			if cl != l && cl != rt && got[j][cl] != 0 {
				t.Errorf("point %d: class %d has probability %g, not a class of the client", j, cl, got[j][cl])
			}
		}
	}
}
