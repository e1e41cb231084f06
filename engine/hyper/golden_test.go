package hyper_test

import (
	"strconv"
	"testing"

	"pfl/cuda"
	"pfl/engine/hyper"
	"pfl/internal/golden"
)

// goldenTol: float64 against PyTorch, sums of at most 7 terms per layer through 3 layers
// and one vector-Jacobian product: differences of a few u = 2^-53 ≈ 1.1e-16 of the
// values' scale, times a condition ≲ 10^2; 1e-11 leaves a margin of 100 and is far below
// any wrong term (a missing ReLU, weight decay on the wrong side of the momentum: ≥ 1e-3).
const goldenTol = 1e-11

// TestHypernetworkMatchesPyTorch: FedTP's hypernetwork written in PyTorch by
// scripts/golden/gen.py (nn.Embedding, a Linear trunk with ReLUs between its layers, one
// Linear head per generated matrix) and engine/hyper with the same weights generate the
// same matrices for clients 1 and 3, take the same server gradient
// Σ_i (m_i/M) J_iᵀ ΔW_i (one autograd.grad with the deltas as grad_outputs), and after two
// torch.optim.SGD steps (momentum 0.9, weight decay 1e-3) hold the same weights and
// momentum buffers.
func TestHypernetworkMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/hyper.safetensors")
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(g.Metadata(k), 64)
		if err != nil {
			t.Fatalf("golden metadata %s: %v", k, err)
		}
		return v
	}
	targetNames := []string{"blocks.0.attn.qkv.weight", "blocks.1.attn.qkv.weight"}
	var targets []hyper.Target
	for _, n := range targetNames {
		_, shape := g.Values("gen/" + n)
		targets = append(targets, hyper.Target{Name: n, Shape: shape[1:]})
	}
	cfg := hyper.Config{Clients: int(num("clients")), Embed: int64(num("embed")), Hidden: int64(num("hidden")),
		Layers: int(num("layers")), LR: num("lr"), Momentum: num("momentum"), WeightDecay: num("weight_decay")}
	gen, _ := cuda.NewGenerator(3, cuda.CPU)
	defer gen.Close()
	net, err := hyper.New(cfg, targets, cuda.CPU, cuda.Float64, gen)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for i, name := range net.Names() {
		v, shape := g.Values("w/" + name)
		s.CopyFrom(net.Params()[i], cuda.FromSlice(s, cuda.CPU, v, shape...))
	}
	s.SetGradEnabled(true)
	rows := cuda.FromSlice(s, cuda.CPU, g.Int64s("rows"))
	wv, _ := g.Values("weights")
	weights := cuda.FromSlice(s, cuda.CPU, wv)
	generated := net.Generate(s, rows)
	var deltas []*cuda.Tensor
	for i, n := range targetNames {
		g.Close("generated "+n, generated[i], "gen/"+n, goldenTol)
		v, shape := g.Values("delta/" + n)
		deltas = append(deltas, cuda.FromSlice(s, cuda.CPU, v, shape...))
	}
	grads := net.Gradient(s, generated, deltas, weights)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, name := range net.Names() {
		g.Close("gradient "+name, grads[i], "grad/"+name, goldenTol)
	}
	clones := func() []*cuda.Tensor { // Step overwrites its gradients
		var c []*cuda.Tensor
		for _, x := range grads {
			c = append(c, s.Clone(x))
		}
		return c
	}
	net.Step(s, clones())
	net.Step(s, clones()) // the same gradient again: the second step reads the momentum
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, name := range net.Names() {
		g.Close("after two steps "+name, net.Params()[i], "step/"+name, goldenTol)
		g.Close("momentum "+name, net.Buffers()[i], "buf/"+name, goldenTol)
	}
}
