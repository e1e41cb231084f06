package hyper

import (
	"math"
	"slices"
	"testing"

	"pfl/cuda"
)

func tinyNet(t *testing.T) *Net {
	t.Helper()
	g, _ := cuda.NewGenerator(5, cuda.CPU)
	defer g.Close()
	n, err := New(Config{Clients: 4, Embed: 3, Hidden: 5, Layers: 3}, []Target{{Name: "a", Shape: []int64{2, 3}}, {Name: "b", Shape: []int64{4}}}, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func vals(t *testing.T, x *cuda.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGradientIsTheWeightedJacobianProduct checks the one-VJP server gradient against
// Σ_i (m_i/M) J_iᵀ ΔW_i with every Jacobian column J_i[:, j] = ∂W_i/∂φ_j built by central
// finite differences of the generated weights, for every element of every parameter
// (embeddings included: rows of clients outside the round must get zero).
func TestGradientIsTheWeightedJacobianProduct(t *testing.T) {
	checkGradientFD(t, tinyNet(t))
}

// TestLowRankGradientIsTheWeightedJacobianProduct is the same check through low-rank heads
// (W = W0 + U V): rank 2 below both sides of a 3×4 matrix, a 4-D target viewed as 3×2 at
// full rank 2, a 2×3 matrix at full rank 2, and a bias vector on a full head.
func TestLowRankGradientIsTheWeightedJacobianProduct(t *testing.T) {
	g, _ := cuda.NewGenerator(6, cuda.CPU)
	defer g.Close()
	n, err := New(Config{Clients: 4, Embed: 3, Hidden: 5, Layers: 2, Rank: 2},
		[]Target{{Name: "a", Shape: []int64{3, 4}}, {Name: "c", Shape: []int64{3, 2, 1, 1}}, {Name: "d", Shape: []int64{2, 3}}, {Name: "b", Shape: []int64{4}}}, cuda.CPU, cuda.Float64, g)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	want := []string{"heads.a.u.weight", "heads.a.u.bias", "heads.a.v.weight", "heads.a.v.bias", "heads.a.base"}
	if got := n.Names()[1+2*2 : 1+2*2+5]; !slices.Equal(got, want) {
		t.Fatalf("low-rank head parameters %v, want %v", got, want)
	}
	checkGradientFD(t, n)
}

// checkGradientFD checks n's VJP server gradient element by element against finite
// differences of its generated weights, for two clients of a round.
func checkGradientFD(t *testing.T, n *Net) {
	t.Helper()
	s := cuda.NewScope()
	defer s.Close()
	g, _ := cuda.NewGenerator(9, cuda.CPU)
	defer g.Close()
	clients := []int64{3, 1}
	rows := cuda.FromSlice(s, cuda.CPU, clients)
	w := []float64{0.3, 0.7}
	gen := n.Generate(s, rows)
	delta := make([]*cuda.Tensor, len(gen))
	for i, x := range gen {
		delta[i] = s.Randn(g, cuda.Float64, cuda.CPU, x.Shape()...)
	}
	got := n.Gradient(s, gen, delta, cuda.FromSlice(s, cuda.CPU, w))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var deltas [][]float64
	for _, d := range delta {
		deltas = append(deltas, vals(t, d))
	}
	generate := func() [][]float64 {
		sc := cuda.NewScope()
		defer sc.Close()
		sc.SetGradEnabled(false)
		var out [][]float64
		for _, x := range n.Generate(sc, rows) {
			out = append(out, vals(t, x))
		}
		return out
	}
	const eps = 1e-6
	checked := 0
	for pi, p := range n.Params() {
		gv := vals(t, got[pi])
		for j := int64(0); j < p.Numel(); j++ {
			flat := s.Reshape(s.Detach(p), -1)
			orig := vals(t, s.Select(flat, 0, j))[0]
			set := func(v float64) {
				sc := cuda.NewScope()
				defer sc.Close()
				sc.SetGradEnabled(false)
				sc.CopyFrom(sc.Narrow(sc.Reshape(sc.Detach(p), -1), 0, j, 1), cuda.FromSlice(sc, cuda.CPU, []float64{v}))
				if err := sc.Err(); err != nil {
					t.Fatal(err)
				}
			}
			set(orig + eps)
			plus := generate()
			set(orig - eps)
			minus := generate()
			set(orig)
			var want float64
			for ti := range plus {
				per := len(plus[ti]) / len(clients)
				for e := range plus[ti] {
					col := (plus[ti][e] - minus[ti][e]) / (2 * eps)
					want += w[e/per] * col * deltas[ti][e]
				}
			}
			if math.Abs(gv[j]-want) > 1e-6*(1+math.Abs(want)) {
				t.Fatalf("%s[%d]: VJP %.10g, finite-difference formula %.10g", n.Names()[pi], j, gv[j], want)
			}
			checked++
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	// embedding rows 0 and 2 are not in the round: exactly zero
	emb := vals(t, got[0])
	e := int(n.Cfg.Embed)
	for _, r := range []int{0, 2} {
		for j := 0; j < e; j++ {
			if emb[r*e+j] != 0 {
				t.Fatalf("embedding of client %d got gradient %g", r, emb[r*e+j])
			}
		}
	}
	if int64(checked) != n.Count() {
		t.Fatalf("checked %d of %d elements", checked, n.Count())
	}
}

// TestStepIsTorchSGD checks two steps of SGD with momentum and weight decay element by
// element against the formula, on every parameter.
func TestStepIsTorchSGD(t *testing.T) {
	n := tinyNet(t)
	s := cuda.NewScope()
	defer s.Close()
	g, _ := cuda.NewGenerator(2, cuda.CPU)
	defer g.Close()
	c := n.Cfg
	p0 := make([][]float64, len(n.Params()))
	buf := make([][]float64, len(n.Params()))
	for i, p := range n.Params() {
		p0[i] = vals(t, p)
		buf[i] = make([]float64, len(p0[i]))
	}
	for step := 0; step < 2; step++ {
		var grads []*cuda.Tensor
		for _, p := range n.Params() {
			grads = append(grads, s.Randn(g, cuda.Float64, cuda.CPU, p.Shape()...))
		}
		gvs := make([][]float64, len(grads))
		for i, g := range grads {
			gvs[i] = vals(t, g) // Step overwrites its gradients
		}
		n.Step(s, grads)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		for i, p := range n.Params() {
			gv := gvs[i]
			for e := range p0[i] {
				d := gv[e] + c.WeightDecay*p0[i][e]
				buf[i][e] = c.Momentum*buf[i][e] + d
				p0[i][e] -= c.LR * buf[i][e]
			}
			got := vals(t, p)
			for e := range got {
				if math.Abs(got[e]-p0[i][e]) > 1e-14 {
					t.Fatalf("step %d %s[%d] = %g, want %g", step, n.Names()[i], e, got[e], p0[i][e])
				}
			}
		}
	}
}

func TestDefaultsAndBadConfig(t *testing.T) {
	n := tinyNet(t)
	if c := n.Cfg; c.LR != 0.01 || c.Momentum != 0.9 || c.WeightDecay != 1e-3 {
		t.Fatalf("defaults %+v", c)
	}
	// the allocated parameters, counted by hand: 4 clients × 3 embedding; trunk 3→5, 5→5,
	// 5→5 with biases; heads 5→6 and 5→4 with biases
	if want := int64(4*3 + (3*5 + 5) + 2*(5*5+5) + (5*6 + 6) + (5*4 + 4)); n.Count() != want || len(n.Names()) != 1+2*3+2*2 {
		t.Fatalf("count %d in %d tensors, want %d in 11", n.Count(), len(n.Names()), want)
	}
	targets := []Target{{Name: "qkv", Shape: []int64{1536, 128}}}
	for _, bad := range []Config{{}, {Clients: 3, Momentum: 1}, {Clients: 3, LR: -1}} {
		if _, err := New(bad, targets, cuda.CPU, cuda.Float32, nil); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := New(Config{Clients: 2}, nil, cuda.CPU, cuda.Float32, nil); err == nil {
		t.Error("no targets accepted")
	}
}

// TestLowRankReducesToFullHeads is an exact reduction: at full rank r' = min(out, in),
// with one factor's head fixed at the identity (zero weight, identity bias) and the
// other's carrying a full head's weight, W0 + U V is that full head, W = b + A h: for a
// tall matrix (out > in, V = I), a wide one (out < in, U = I), a 4-D target and a bias
// (full heads in both nets). The two nets share the embeddings and trunk (drawn first
// from the same seed), so they must generate the same weights for the same trunk output
// and take the same server gradient: the embeddings and trunk equal, the varying factor's
// weight equal to the full head's weight, the base's to the full bias's, the fixed
// factor's exactly what U V passes back.
func TestLowRankReducesToFullHeads(t *testing.T) {
	targets := []Target{{Name: "tall", Shape: []int64{4, 3}}, {Name: "wide", Shape: []int64{2, 5}}, {Name: "conv", Shape: []int64{3, 2, 1, 1}}, {Name: "bias", Shape: []int64{4}}}
	build := func(rank int64) *Net {
		g, _ := cuda.NewGenerator(8, cuda.CPU)
		defer g.Close()
		n, err := New(Config{Clients: 4, Embed: 3, Hidden: 6, Layers: 3, Rank: rank}, targets, cuda.CPU, cuda.Float64, g)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	full, low := build(0), build(5) // 5 >= every side: r' = min(out, in)
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	set := func(dst, src *cuda.Tensor) {
		s.CopyFrom(dst, s.Reshape(src, dst.Shape()...))
	}
	eye := func(r int64) *cuda.Tensor {
		v := make([]float64, r*r)
		for i := int64(0); i < r; i++ {
			v[i*r+i] = 1
		}
		return cuda.FromSlice(s, cuda.CPU, v, r*r)
	}
	trunk := 1 + 2*full.Cfg.Layers
	for i := 0; i < trunk; i++ {
		compare(t, full.Names()[i], full.Params()[i], low.Params()[i], 0)
	}
	fixed := map[int]bool{} // low-rank parameters held at zero or the identity
	for i, tg := range targets {
		fw, fb := full.Params()[full.heads[i].at], full.Params()[full.heads[i].at+1]
		h, p := low.heads[i], low.Params()[low.heads[i].at:]
		if h.r == 0 {
			set(p[0], fw)
			set(p[1], fb)
			continue
		}
		if h.r != min(h.out, h.in) {
			t.Fatalf("%s: rank %d, want min(%d, %d)", tg.Name, h.r, h.out, h.in)
		}
		vary, still := 0, 2 // U carries the head, V = I
		if h.out < h.in {
			vary, still = 2, 0
		}
		set(p[vary], fw)
		s.CopyFrom(p[vary+1], s.Zeros(cuda.Float64, cuda.CPU, p[vary+1].Shape()...))
		s.CopyFrom(p[still], s.Zeros(cuda.Float64, cuda.CPU, p[still].Shape()...))
		set(p[still+1], eye(h.r))
		set(p[4], fb)
		fixed[h.at+still], fixed[h.at+still+1], fixed[h.at+vary+1] = true, true, true
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.SetGradEnabled(true)
	rows := cuda.FromSlice(s, cuda.CPU, []int64{2, 0, 3})
	w := cuda.FromSlice(s, cuda.CPU, []float64{0.5, 0.2, 0.3})
	gf, gl := full.Generate(s, rows), low.Generate(s, rows)
	g, _ := cuda.NewGenerator(4, cuda.CPU)
	defer g.Close()
	delta := make([]*cuda.Tensor, len(targets))
	for i := range targets {
		compare(t, "generated "+targets[i].Name, gl[i], gf[i], 1e-15)
		delta[i] = s.Randn(g, cuda.Float64, cuda.CPU, gf[i].Shape()...)
	}
	df, dl := full.Gradient(s, gf, delta, w), low.Gradient(s, gl, delta, w)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < trunk; i++ {
		compare(t, "gradient "+full.Names()[i], dl[i], df[i], 1e-13)
	}
	for i := range targets {
		h, fa := low.heads[i], full.heads[i].at
		if h.r == 0 {
			compare(t, "gradient "+low.Names()[h.at], dl[h.at], df[fa], 1e-13)
			compare(t, "gradient "+low.Names()[h.at+1], dl[h.at+1], df[fa+1], 1e-13)
			continue
		}
		vary := h.at
		if h.out < h.in {
			vary = h.at + 2
		}
		compare(t, "gradient "+low.Names()[vary], dl[vary], s.Reshape(df[fa], dl[vary].Shape()...), 1e-13)
		compare(t, "gradient "+low.Names()[h.at+4], dl[h.at+4], s.Reshape(df[fa+1], h.out, h.in), 1e-13)
		for j := h.at; j < h.at+4; j++ {
			if !fixed[j] && j != vary {
				t.Fatalf("parameter %s neither varies nor is fixed", low.Names()[j])
			}
		}
	}
}

// compare requires |a − b| <= tol·(1 + |b|) element by element.
func compare(t *testing.T, what string, a, b *cuda.Tensor, tol float64) {
	t.Helper()
	av, bv := vals(t, a), vals(t, b)
	if len(av) != len(bv) {
		t.Fatalf("%s: %d and %d elements", what, len(av), len(bv))
	}
	for i := range av {
		if math.Abs(av[i]-bv[i]) > tol*(1+math.Abs(bv[i])) {
			t.Fatalf("%s[%d] = %.17g, want %.17g", what, i, av[i], bv[i])
		}
	}
}

// TestParamCountAndAutoRank: ParamCount equals what New allocates, full and low-rank;
// RankAuto keeps full heads up to AutoFullHeads parameters and takes AutoRank above.
func TestParamCountAndAutoRank(t *testing.T) {
	targets := []Target{{Name: "w", Shape: []int64{7, 5}}, {Name: "c", Shape: []int64{6, 4, 1, 1}}, {Name: "b", Shape: []int64{7}}}
	g, _ := cuda.NewGenerator(1, cuda.CPU)
	defer g.Close()
	for _, rank := range []int64{0, 1, 3, 100, RankAuto} {
		cfg := Config{Clients: 3, Embed: 4, Hidden: 6, Layers: 2, Rank: rank}
		n, err := New(cfg, targets, cuda.CPU, cuda.Float32, g)
		if err != nil {
			t.Fatal(err)
		}
		if got := ParamCount(cfg, targets); got != float64(n.Count()) {
			t.Errorf("rank %d: ParamCount %g, allocated %d", rank, got, n.Count())
		}
		// by hand: embeddings 3·4, trunk 4→6→6 with biases, then the heads
		heads := map[int64]int64{
			0: 7 * (7*5 + 6*4 + 7),
			1: 7*(7*1+1*5) + 7*5 + 7*(6*1+1*4) + 6*4 + 7*7,
			3: 7*(7*3+3*5) + 7*5 + 7*(6*3+3*4) + 6*4 + 7*7,
			// rank capped at min(out, in): 5 and 4
			100: 7*(7*5+5*5) + 7*5 + 7*(6*4+4*4) + 6*4 + 7*7,
		}
		heads[RankAuto] = heads[0] // tiny: full heads
		if want := int64(3*4+5*6+7*6) + heads[rank]; n.Count() != want {
			t.Errorf("rank %d: %d parameters, want %d", rank, n.Count(), want)
		}
		n.Close()
	}
	// 2^28 head parameters exactly: still full; one more output: rank AutoRank
	cfg := Config{Clients: 1, Hidden: 1<<20 - 1, Rank: RankAuto} // full head: 2^20 per output
	at := []Target{{Name: "w", Shape: []int64{16, 16}}}
	if c := cfg.resolved(at); c.Rank != 0 {
		t.Errorf("%g full-head parameters: rank %d, want full heads", c.headParams(at), c.Rank)
	}
	at = []Target{{Name: "w", Shape: []int64{16, 16}}, {Name: "b", Shape: []int64{1}}}
	if c := cfg.resolved(at); c.Rank != AutoRank {
		t.Errorf("more than 2^28 full-head parameters: rank %d, want %d", c.Rank, AutoRank)
	}
	if _, err := New(Config{Clients: 2, Rank: -2}, targets, cuda.CPU, cuda.Float32, g); err == nil {
		t.Error("rank -2 accepted")
	}
}

// TestStepClipsTheGradientNorm: with Clip set, a step equals the unclipped step of the
// gradients scaled by Clip/(‖g‖ + 1e-6) when their total norm ‖g‖ exceeds Clip, and the
// unclipped step itself when it does not (torch.nn.utils.clip_grad_norm_).
func TestStepClipsTheGradientNorm(t *testing.T) {
	for _, scale := range []float64{10, 0.01} {
		clipped, plain := tinyNet(t), tinyNet(t) // the same seed: equal parameters
		clipped.Cfg.Clip = 1
		s := cuda.NewScope()
		g, _ := cuda.NewGenerator(3, cuda.CPU)
		var grads []*cuda.Tensor
		var sq float64
		for _, p := range clipped.Params() {
			x := s.MulScalar(s.Randn(g, cuda.Float64, cuda.CPU, p.Shape()...), scale)
			grads = append(grads, x)
			for _, v := range vals(t, x) {
				sq += v * v
			}
		}
		g.Close()
		coef := math.Min(1, 1/(math.Sqrt(sq)+1e-6))
		if scale > 1 && coef > 0.5 || scale < 1 && coef != 1 {
			t.Fatalf("scale %g: norm %g does not test what it should", scale, math.Sqrt(sq))
		}
		scaled := make([]*cuda.Tensor, len(grads))
		for i, x := range grads {
			scaled[i] = s.MulScalar(x, coef)
		}
		clipped.Step(s, grads)
		plain.Step(s, scaled)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		for i, p := range clipped.Params() {
			a, b := vals(t, p), vals(t, plain.Params()[i])
			for e := range a {
				if math.Abs(a[e]-b[e]) > 1e-14 {
					t.Fatalf("scale %g: %s[%d] = %g clipped, %g by the scaled gradient", scale, clipped.Names()[i], e, a[e], b[e])
				}
			}
		}
		s.Close()
	}
	if _, err := New(Config{Clients: 2, Clip: -1}, []Target{{Name: "a", Shape: []int64{2}}}, cuda.CPU, cuda.Float64, nil); err == nil {
		t.Error("a negative clip accepted")
	}
}

// TestOffsetShiftsTheGeneratedValues: a target's Offset adds a constant to what a
// hypernetwork with the same parameters generates, and changes neither the parameters
// nor the server gradient (the constant has no derivative).
func TestOffsetShiftsTheGeneratedValues(t *testing.T) {
	build := func(off float64) *Net {
		g, _ := cuda.NewGenerator(5, cuda.CPU)
		defer g.Close()
		n, err := New(Config{Clients: 4, Embed: 3, Hidden: 5, Layers: 2},
			[]Target{{Name: "w", Shape: []int64{2, 3}}, {Name: "scale", Shape: []int64{4}, Offset: off}}, cuda.CPU, cuda.Float64, g)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	plain, shifted := build(0), build(1)
	s := cuda.NewScope()
	defer s.Close()
	rows := cuda.FromSlice(s, cuda.CPU, []int64{2, 0})
	a, b := plain.Generate(s, rows), shifted.Generate(s, rows)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0, 1} {
		x, y := vals(t, a[i]), vals(t, b[i])
		for j := range x {
			if y[j] != x[j]+want {
				t.Fatalf("target %d element %d: %v with the offset, %v without (want + %v)", i, j, y[j], x[j], want)
			}
		}
	}
	checkGradientFD(t, shifted)
}
