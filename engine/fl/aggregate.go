package fl

import "pfl/cuda"

// Weights are the FedAvg weights m_k / Σ m of the sampled clients (m_k: train samples).
func Weights(samples []int) []float64 {
	var total float64
	for _, m := range samples {
		total += float64(m)
	}
	w := make([]float64, len(samples))
	for i, m := range samples {
		w[i] = float64(m) / total
	}
	return w
}

// AverageInto is the default server update (FedAvg): global ← Σ_k weights_k · trained_k
// for every shared parameter, all of them in one native call.
func AverageInto(s *cuda.Scope, global, trained []*cuda.Tensor, weights *cuda.Tensor) error {
	if len(global) > 0 {
		s.ForeachWeightedSum(global, trained, weights)
	}
	return s.Err()
}

// WeightedMean reduces a client-stacked tensor x [K, ...] to Σ_k w_k x_k as [1, ...]: the
// aggregation of a shared parameter, one reduction over the client dimension. Run
// aggregates all shared parameters at once with cuda's ForeachWeightedSum; this is the
// per-tensor reference.
func WeightedMean(s *cuda.Scope, x *cuda.Tensor, w *cuda.Tensor) *cuda.Tensor {
	shape := make([]int64, x.Dim())
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = -1
	return s.Sum(s.Mul(x, s.Reshape(s.To(w, x.DType()), shape...)), true, 0)
}
