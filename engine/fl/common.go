package fl

import (
	"math"

	"pfl/cuda"
	"pfl/engine/model"
)

// Helpers that both sides of a round use: the local training (train.go) and the server
// (server.go), the evaluation and the algorithms.

// Builder makes a model for k clients, drawing its initial weights from gen.
type Builder func(k int, gen *cuda.Generator) (model.Model, error)

func ids64(ids []int) []int64 {
	out := make([]int64, len(ids))
	for i, c := range ids {
		out[i] = int64(c)
	}
	return out
}

// MeanCrossEntropy is each client's mean cross-entropy over its real samples, the default
// local loss: logits [K, B, C] with labels [K, B], or [K, B, T, C] with a label per
// position [K, B, T] (text: a sample's loss is the mean over its positions); mask [K, B]
// -> [K]; an idle client (no real sample) gives 0.
func MeanCrossEntropy(s *cuda.Scope, logits, y, mask *cuda.Tensor) *cuda.Tensor {
	k, b, c := logits.Size(0), logits.Size(1), logits.Size(-1)
	per := s.CrossEntropy(s.Reshape(logits, -1, c), s.Reshape(y, -1), nil, cuda.ReduceNone, 0)
	if logits.Dim() > 3 {
		per = s.Mean(s.Reshape(per, k, b, -1), false, 2)
	}
	per = s.Reshape(per, k, b)
	m := s.To(mask, per.DType())
	n := s.Clamp(s.Sum(m, false, 1), 1, math.Inf(1))
	return s.Div(s.Sum(s.Mul(per, m), false, 1), n)
}
