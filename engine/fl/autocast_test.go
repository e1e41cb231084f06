package fl

import (
	"math"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// TestBF16AutocastTrainsFloat32Weights runs the same rounds in float32 and under bf16
// autocast: the weights stay float32, the losses differ (the matmuls did run in bf16) but
// only by bf16 rounding, and evaluation works under autocast.
func TestBF16AutocastTrainsFloat32Weights(t *testing.T) {
	st := newSetup(t, tinySplit(), data.PartitionConfig{Method: data.MethodIID, Clients: 4, Seed: 3})
	vit := func(k int, g *cuda.Generator) (model.Model, error) {
		c := model.ViTConfig{Image: 16, Patch: 4, Channels: 1, Dim: 32, Depth: 2, Heads: 2, HeadDim: 16, MLP: 48, Classes: 4, Eps: 1e-5}
		return model.NewViT("vit", c, k, cuda.CPU, cuda.Float32, g)
	}
	losses := map[cuda.DType][]float64{}
	for _, ac := range []cuda.DType{0, cuda.BFloat16} {
		cfg := Config{Rounds: 3, PerRound: 2, Batch: 16, LR: 0.05, Momentum: 0.9, Seed: 5, Device: cuda.CPU, Autocast: ac}
		r, err := New(cfg, &FedTP{Hyper: smallHyper()}, st.fed, st.train, st.test, vit)
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
		for _, p := range r.stacked.Params().List {
			if p.T.DType() != cuda.Float32 {
				t.Fatalf("autocast %v: %s is %s, want float32 master weights", ac, p.Name, p.T.DType())
			}
		}
		if ev := h[len(h)-1].Eval; ev == nil || !(ev.Micro >= 0 && ev.Micro <= 1) {
			t.Fatalf("autocast %v: evaluation %+v", ac, ev)
		}
	}
	same := true
	for i, l := range losses[0] {
		b := losses[cuda.BFloat16][i]
		if l != b {
			same = false
		}
		if math.Abs(l-b) > 0.05*math.Abs(l) {
			t.Errorf("round %d: float32 loss %.5f, bf16 autocast %.5f: more than bf16 rounding", i, l, b)
		}
	}
	if same {
		t.Error("bf16 autocast gave exactly the float32 losses: it did not run in bf16")
	}
	if _, err := New(Config{Rounds: 1, PerRound: 2, Device: cuda.CPU, Autocast: cuda.Int64}, FedAvg(), st.fed, st.train, st.test, vit); err == nil {
		t.Error("autocast to int64 accepted")
	}
}
