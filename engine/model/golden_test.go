package model_test

import (
	"strconv"
	"testing"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
	"pfl/internal/golden"
)

// goldenTol bounds pfl against PyTorch in float64. Both compute the same sums in possibly
// different orders and with different kernels (erf, exp, rsqrt): each result differs by
// about n·u·κ, u = 2^-53 ≈ 1.1e-16, n ≤ 48 (the longest contraction here) and κ the
// condition of the computation (≲ 10^3 through two blocks, softmax, LayerNorm and the
// loss' backward pass): ≲ 5e-12 of the values' scale. 1e-10 leaves a margin of 20 and is
// still 10^6 times smaller than what any wrong layout, constant or missing term produces
// (a swapped q and k, GELU's tanh form, a LayerNorm eps of 1e-6: all ≥ 1e-4 here).
const goldenTol = 1e-10

// goldenRow is the client row that holds the golden model; the other rows hold other
// weights and inputs, so the test also shows that stacking keeps clients apart.
const goldenRow = 1

// TestTinyViTMatchesPyTorch: FedTP's tiny ViT (lucidrains layout) written in PyTorch by
// scripts/golden/gen.py and pfl's tiny-vit preset, with the same weights in row 1 of a
// 3-client stack, give the same logits, loss, gradients of every parameter, and the same
// weights after three steps of torch.optim.SGD (momentum 0.9, weight decay 1e-5).
func TestTinyViTMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/tiny_vit.safetensors")
	atoi := func(k string) int64 {
		v, err := strconv.ParseInt(g.Metadata(k), 10, 64)
		if err != nil {
			t.Fatalf("golden metadata %s: %v", k, err)
		}
		return v
	}
	none := 0.0
	spec := model.Spec{Preset: "tiny-vit", Image: atoi("image"), Patch: atoi("patch"), Channels: atoi("channels"),
		Dim: atoi("dim"), Depth: atoi("depth"), Heads: atoi("heads"), HeadDim: atoi("dim_head"), MLP: atoi("mlp"),
		Classes: atoi("classes"), Dropout: &none}
	const k = 3
	gen, _ := cuda.NewGenerator(7, cuda.CPU)
	defer gen.Close()
	m, err := model.Build(spec, k, cuda.CPU, cuda.Float64, gen)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for _, p := range m.Params().List {
		v, shape := g.Values("w/" + p.Name)
		s.CopyFrom(s.Narrow(p.T, 0, goldenRow, 1), cuda.FromSlice(s, cuda.CPU, v, append([]int64{1}, shape...)...))
	}
	s.SetGradEnabled(true)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var params []*cuda.Tensor
	for _, p := range m.Params().List {
		params = append(params, p.T)
	}
	// stack rows: other clients get their own random images and labels
	batch := func(xName, yName string) (x, y *cuda.Tensor) {
		xv, xs := g.Values(xName)
		yv := g.Int64s(yName)
		var xr, yr []*cuda.Tensor
		for row := 0; row < k; row++ {
			if row == goldenRow {
				xr = append(xr, cuda.FromSlice(s, cuda.CPU, xv, xs...))
				yr = append(yr, cuda.FromSlice(s, cuda.CPU, yv))
				continue
			}
			r := s.Zeros(cuda.Float64, cuda.CPU, xs...)
			s.FillNormal(gen, r, 0, 1)
			xr = append(xr, r)
			other := make([]int64, len(yv))
			for i := range other {
				other[i] = int64((i + row) % int(spec.Classes))
			}
			yr = append(yr, cuda.FromSlice(s, cuda.CPU, other))
		}
		return s.Stack(0, xr...), s.Stack(0, yr...)
	}
	// each client's mean cross-entropy, summed over clients: row 1's gradient is its own
	loss := func(x, y *cuda.Tensor) (perClient, total *cuda.Tensor) {
		logits := m.Forward(s, x, &model.Pass{})
		c := logits.Size(-1)
		per := s.Reshape(s.CrossEntropy(s.Reshape(logits, -1, c), s.Reshape(y, -1), nil, cuda.ReduceNone, 0), k, -1)
		perClient = s.Mean(per, false, 1)
		return perClient, s.Sum(perClient, false)
	}

	x, y := batch("x", "y")
	logits := m.Forward(s, x, &model.Pass{})
	g.Close("logits", s.Select(logits, 0, goldenRow), "logits", goldenTol)
	perClient, total := loss(x, y)
	g.Close("loss", s.Narrow(perClient, 0, goldenRow, 1), "loss", goldenTol)
	grads := s.Grad([]*cuda.Tensor{total}, nil, params, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params().List {
		g.Close("grad "+p.Name, s.Select(grads[i], 0, goldenRow), "grad/"+p.Name, goldenTol)
	}

	// a local epoch: three steps of pfl's SGD on fixed batches
	opt := fl.NewSGD(fl.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-5})
	defer opt.Close()
	active := cuda.FromSlice(s, cuda.CPU, []float32{1, 1, 1})
	for i := 0; i < 3; i++ {
		bx, by := batch("epoch/x"+strconv.Itoa(i), "epoch/y"+strconv.Itoa(i))
		_, l := loss(bx, by)
		gs := s.Grad([]*cuda.Tensor{l}, nil, params, cuda.GradOptions{})
		opt.Step(s, params, gs, active)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params().List {
		g.Close("after the epoch "+p.Name, s.Select(p.T, 0, goldenRow), "epoch/w/"+p.Name, goldenTol)
	}
}
