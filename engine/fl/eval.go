package fl

import (
	"fmt"
	"math"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// EvalResult is every client's personalized model on its own test split.
type EvalResult struct {
	Correct, Count []int     // per client
	Accuracy       []float64 // per client
	Loss           []float64 // per client mean test loss
	Micro          float64   // Σ correct / Σ samples over all clients
	Mean, Std      float64   // over clients' accuracies
}

// Evaluate runs every client's personalized model (global shared part + its personal
// rows) on its test split, EvalChunk clients per stacked pass.
func (r *Run) Evaluate() (EvalResult, error) {
	n := len(r.fed.Part.Test)
	res := EvalResult{Correct: make([]int, n), Count: make([]int, n), Accuracy: make([]float64, n), Loss: make([]float64, n)}
	k := r.cfg.EvalChunk
	for start := 0; start < n; start += k {
		ids := make([]int, k)
		for i := range ids {
			ids[i] = min(start+i, n-1) // the last chunk repeats its last client; extra rows are ignored
		}
		correct, loss, err := r.evalChunk(ids)
		if err != nil {
			return res, err
		}
		for i := 0; i < k && start+i < n; i++ {
			c := start + i
			res.Correct[c] = int(math.Round(correct[i]))
			res.Count[c] = len(r.fed.Part.Test[c])
			res.Accuracy[c] = correct[i] / float64(res.Count[c])
			res.Loss[c] = loss[i] / float64(res.Count[c])
		}
	}
	var totalC, totalN int
	var sum, sum2 float64
	for c := range res.Accuracy {
		totalC += res.Correct[c]
		totalN += res.Count[c]
		sum += res.Accuracy[c]
		sum2 += res.Accuracy[c] * res.Accuracy[c]
	}
	res.Micro = float64(totalC) / float64(totalN)
	res.Mean = sum / float64(n)
	res.Std = math.Sqrt(math.Max(sum2/float64(n)-res.Mean*res.Mean, 0))
	return res, nil
}

// evalChunk returns the number of correct predictions and the summed loss of each of the
// chunk's clients.
func (r *Run) evalChunk(ids []int) (correct, loss []float64, err error) {
	s := cuda.NewScope()
	defer s.Close()
	r.load(s, r.evalM, ids)
	if r.gen != nil {
		s.SetGradEnabled(false)
		r.loadGenerated(s, r.evalM, r.gen.Generate(s, cuda.FromSlice(s, r.cfg.Device, ids64(ids))))
		s.SetGradEnabled(true)
	}
	if ft, ok := r.strat.(FineTuner); ok {
		// fine-tune on the clients' own training data; evalM's rows are reloaded before
		// the next use, so nothing of it is kept
		if _, _, err := r.trainPhase(s, r.evalM, ids, r.fed.Part.Train, len(r.History), 1000, ft.FineTune(), nil); err != nil {
			return nil, nil, err
		}
	}
	parts := make([][]int, len(ids))
	var noise []float64
	for i, c := range ids {
		if len(r.fed.Part.Test[c]) == 0 {
			return nil, nil, fmt.Errorf("fl: client %d has no test samples", c)
		}
		parts[i] = r.fed.Part.Test[c]
		if r.fed.Part.Noise != nil {
			noise = append(noise, r.fed.Part.Noise[c])
		}
	}
	// one pass in order, no augmentation; the eval seed drives only the test-time noise
	seed := rng.Derive(rng.Key{Seed: r.cfg.Seed, Purpose: "eval", Round: -1, Client: -1})
	plan, err := data.NewPlan(ids, parts, data.PlanConfig{Epochs: 1, Batch: r.cfg.EvalBatch, Seed: seed, Round: -1})
	if err != nil {
		return nil, nil, err
	}
	dp, err := plan.Upload(r.cfg.Device, noise)
	if err != nil {
		return nil, nil, err
	}
	defer dp.Close()
	s.SetGradEnabled(false)
	var knn KNN
	var mem *memory
	if mz, ok := r.strat.(Memorizer); ok && mz.Memory().K > 0 {
		knn = mz.Memory()
		if mem, err = r.buildMemory(s, r.evalM.(model.Headed), ids); err != nil {
			return nil, nil, err
		}
	}
	k := int64(len(ids))
	hits := s.Zeros(cuda.Float64, r.cfg.Device, k)
	losses := s.Zeros(cuda.Float64, r.cfg.Device, k)
	st := cuda.NewScope()
	defer st.Close()
	st.SetGradEnabled(false)
	for step := 0; step < plan.Steps; step++ {
		st.Reset()
		st.SetGradEnabled(false)
		b := r.test.Batch(st, dp, step)
		var logits *cuda.Tensor
		if mem != nil {
			h := r.evalM.(model.Headed)
			f := h.Features(st, st.To(b.X, r.cfg.DType), &model.Pass{})
			logits = knnLogits(st, knn, mem, f, h.Head(st, f, &model.Pass{}))
		} else {
			logits = r.evalM.Forward(st, st.To(b.X, r.cfg.DType), &model.Pass{})
		}
		mask := st.To(b.Mask, cuda.Float64)
		right := st.To(st.Eq(st.Argmax(logits, -1, false), b.Y), cuda.Float64)
		c := logits.Size(-1)
		per := st.Reshape(st.CrossEntropy(st.Reshape(logits, -1, c), st.Reshape(b.Y, -1), nil, cuda.ReduceNone, 0), k, -1)
		s.CopyFrom(hits, st.Add(hits, st.Sum(st.Mul(right, mask), false, 1)))
		s.CopyFrom(losses, st.Add(losses, st.Sum(st.Mul(st.To(per, cuda.Float64), mask), false, 1)))
		if err := st.Err(); err != nil {
			return nil, nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, nil, err
	}
	if correct, err = hits.Float64s(); err != nil {
		return nil, nil, err
	}
	loss, err = losses.Float64s()
	return correct, loss, err
}

// Train runs every round and returns the run's history (also in r.History).
func (r *Run) Train() ([]RoundMetrics, error) {
	for round := len(r.History); round < r.cfg.Rounds; round++ {
		if _, err := r.Round(round); err != nil {
			return r.History, err
		}
	}
	return r.History, nil
}
