package fl

import (
	"fmt"
	"math"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// KNN is FedTP+KNN's evaluation (FedTP §IV-B.6, Table VI; official code's --k_neighbor):
// each client embeds its own training images with its personalized model (model.Headed's
// Features: for the ViT, the class token before the head's LayerNorm, what the official
// code's produce_feature returns), and every test image takes a vote of its K nearest training features by
// squared L2 distance (what FAISS's IndexFlatL2 returns), each neighbour weighted by
// exp(−d/dim); the normalized vote is mixed with the model's softmax as
// Weight·vote + (1 − Weight)·softmax. Training is unchanged.
//
// KNN is also the config's algorithm.knn (the official code's values are the defaults).
type KNN struct {
	K      int     `mapstructure:"k" json:"k"`           // neighbours; default 10 (0: off, outside a config)
	Weight float64 `mapstructure:"weight" json:"weight"` // weight of the neighbours' vote against the model's softmax; default 0.6
}

// Default is the official code's vote: 10 neighbours at weight 0.6.
func (KNN) Default() KNN { return KNN{K: 10, Weight: 0.6} }

// Validate reports a vote a config cannot ask for, naming its config key.
func (c KNN) Validate() error {
	k := &check.Checker{}
	k.AtLeast("algorithm.knn.k", int64(c.K), 1)
	k.Real("algorithm.knn.weight", c.Weight, 0, 1, "[]")
	return k.Err()
}

// buildMemory embeds every training sample of the clients ids with embed (the model in
// evaluation mode: its features for the KNN, what EvalHooks.Embed returns), in s:
// one pass in order, no augmentation, no noise.
func (r *Run) buildMemory(s *cuda.Scope, ids []int, embed func(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor) (*Embedded, error) {
	parts := make([][]int, len(ids))
	for i, c := range ids {
		parts[i] = r.fed.Part.Train[c]
	}
	plan, err := data.NewPlan(ids, parts, data.PlanConfig{Epochs: 1, Batch: r.cfg.EvalBatch, Round: -1})
	if err != nil {
		return nil, err
	}
	dp, err := plan.Upload(r.cfg.Device, nil)
	if err != nil {
		return nil, err
	}
	defer dp.Close()
	var feats, ys, masks []*cuda.Tensor
	for step := 0; step < plan.Steps; step++ {
		b := r.train.Batch(s, dp, step)
		feats = append(feats, embed(s, r.input(s, b.X)))
		ys = append(ys, b.Y)
		masks = append(masks, b.Mask)
	}
	mem := &Embedded{Feat: s.Cat(1, feats...), Y: s.Cat(1, ys...), Mask: s.Cat(1, masks...)}
	return mem, s.Err()
}

// knnLogits turns features f [K, B, D] and the model's logits into the log of the mixed
// distribution, so that argmax and cross-entropy read it as logits.
func knnLogits(s *cuda.Scope, k KNN, mem *Embedded, f, logits *cuda.Tensor) *cuda.Tensor {
	kk, b, d, c := f.Size(0), f.Size(1), f.Size(2), logits.Size(-1)
	m := mem.Feat.Size(1)
	dist := s.Pow(s.CDist(f, mem.Feat, 2), 2) // [K, B, M]
	// padded memory slots are infinitely far: exp(−1e30/D) = 0 votes
	far := s.MulScalar(s.AddScalar(s.Neg(s.To(mem.Mask, dist.DType())), 1), 1e30)
	dist = s.Add(dist, s.Unsqueeze(far, 1))
	n := min(int64(k.K), m)
	near, idx := s.TopK(dist, n, -1, false, true) // [K, B, n]
	labels := s.Gather(s.Expand(s.Unsqueeze(mem.Y, 1), kk, b, m), 2, idx)
	sim := s.Exp(s.DivScalar(s.Neg(near), float64(d)))
	vote := s.ScatterAdd(s.Zeros(sim.DType(), sim.Device(), kk, b, c), 2, labels, sim)
	vote = s.Div(vote, s.Clamp(s.Sum(vote, true, 2), 1e-30, math.Inf(1)))
	mixed := s.Add(s.MulScalar(vote, k.Weight), s.MulScalar(s.Softmax(logits, -1), 1-k.Weight))
	return s.Log(s.Clamp(mixed, 1e-12, math.Inf(1)))
}

// checkKNN reports a KNN configuration the model cannot serve.
func checkKNN(k KNN, m model.Model) error {
	if k.K == 0 {
		return nil
	}
	if k.K < 0 || k.Weight < 0 || k.Weight > 1 {
		return fmt.Errorf("knn: k %d must be >= 0 and weight %g in [0, 1]", k.K, k.Weight)
	}
	if _, err := model.HeadedOf(m); err != nil {
		return fmt.Errorf("knn: %w", err)
	}
	return nil
}
