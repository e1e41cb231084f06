package fl_test

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/fl/internal/fltest"
	"pfl/engine/model"
)

// TestBF16AutocastTrainsFloat32Weights runs the same rounds in float32 and under bf16
// autocast: the weights stay float32, the losses differ (the matmuls did run in bf16) but
// only by bf16 rounding, and evaluation works under autocast.
func TestBF16AutocastTrainsFloat32Weights(t *testing.T) {
	st := fltest.NewSetup(t, fltest.TinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 3})
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		none := 0.0
		return model.Build(fltest.VitSpec(32, 2, 16, 48, &none), k, cuda.CPU, cuda.Float32, g)
	}
	losses := map[cuda.DType][]float64{}
	for _, ac := range []cuda.DType{0, cuda.BFloat16} {
		cfg := fl.Config{Rounds: 3, PerRound: 2, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, Autocast: ac}
		r, err := fl.New(cfg, &algo.FedTP{Hyper: fltest.SmallHyper()}, st.Fed, st.Train, st.Test, vit)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h, err := r.Train()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h {
			losses[ac] = append(losses[ac], m.TrainLoss)
		}
		for _, p := range r.Stacked().Params().List {
			if p.T.DType() != cuda.Float32 {
				t.Fatalf("autocast %v: %s is %s, want float32 master weights", ac, p.Name, p.T.DType())
			}
		}
		if ev := h[len(h)-1].Eval; ev == nil || !(ev.Micro >= 0 && ev.Micro <= 1) {
			t.Fatalf("autocast %v: evaluation %+v", ac, ev)
		}
	}
	// How far bf16 rounding can move a round's training loss, to first order. bf16 has
	// unit roundoff u = 2^-8. cuda's TestCPUBF16Autocast derives, for one matmul with
	// contraction length n and whether libtorch accumulates the products in fp32 or in bf16,
	// a squared relative error ≤ u²·(n+9) (twice the expected worst case): ε(n) = u·√(n+9).
	// Roundings in different matmuls are independent, so m matmuls in a chain add in
	// quadrature, ρ = √m·ε(n_max). LayerNorm, GELU, softmax and the residual adds pass a
	// relative error on with a factor ≈ 1 at these scales.
	//   - Forward: m = 14 matmuls from pixels to logits (patch embedding; per block q/k/v,
	//     scores, attention·values, output, two MLP layers; head), n_max = 48 (the MLP):
	//     ρ_f = √14·ε(48) ≈ 0.11 relative error of the logits z. For cross-entropy,
	//     z ↦ z(1+ρ) changes the loss by ρ·(E_p[z] − z_y) = ρ·(L − H(p)), and
	//     0 ≤ H(p) ≤ ln C, so |ΔL| ≤ ρ_f·max(L, ln C).
	//   - Backward: the weight gradients contract over batch × tokens, n_max = 16·17 = 272:
	//     ρ_g = √14·ε(272) ≈ 0.25. Momentum SGD is linear in the gradients, so the weights'
	//     displacement carries a relative error ≤ ρ_g, and the loss decrease it produced,
	//     L₀ − L (L₀: the loss before training, ≤ max(ln C, the largest round loss)),
	//     changes by ≤ ρ_g·(L₀ − L).
	// So |L_bf16 − L_fp32| ≤ ρ_f·max(L, ln C) + ρ_g·(L₀ − L)⁺: about 0.3 for these losses,
	// while a broken autocast (training that stalls at ≈ ln C, or garbage) misses by more.
	// Typical differences are far smaller (rounding to nearest gives E δ² ≈ u²/6, and the
	// loss averages many samples): ≈ 1e-3 with either accumulation.
	const u, classes = 1.0 / 256, 4
	eps := func(n float64) float64 { return u * math.Sqrt(n+9) }
	rhoF, rhoG := math.Sqrt(14)*eps(48), math.Sqrt(14)*eps(16*17)
	lnC := math.Log(classes)
	l0 := lnC
	for _, l := range losses[0] {
		l0 = math.Max(l0, l)
	}
	same := true
	for i, l := range losses[0] {
		b := losses[cuda.BFloat16][i]
		if l != b {
			same = false
		}
		tol := rhoF*math.Max(l, lnC) + rhoG*math.Max(0, l0-l)
		t.Logf("round %d: float32 loss %.5f, bf16 autocast %.5f, difference %.2g (bound %.2g)", i, l, b, math.Abs(l-b), tol)
		if !(math.Abs(l-b) <= tol) {
			t.Errorf("round %d: float32 loss %.5f, bf16 autocast %.5f: differ by more than bf16 rounding explains (%.3g)", i, l, b, tol)
		}
	}
	// The losses are sums of thousands of rounded values: if every one of them equals
	// float32's, no matmul ran in bf16.
	if same {
		t.Error("bf16 autocast gave exactly the float32 losses: it did not run in bf16")
	}
	if _, err := fl.New(fl.Config{Rounds: 1, PerRound: 2, Device: cuda.CPU, Autocast: cuda.Int64}, algo.FedAvg(), st.Fed, st.Train, st.Test, vit); err == nil {
		t.Error("autocast to int64 accepted")
	}
}
