package fl

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// Inspect runs the personalized models of the clients ids on images of their own test
// splits, for analyses that look inside a model (attention and focal modulation maps).
// samples[i] lists the indices into the test images given to client ids[i]; every list
// holds the same number B of indices. The models are loaded as evaluation loads them —
// each client's personal rows, the global shared part and its generated parameters —
// EvalChunk clients at a time, without evaluation-time fine-tuning (FedBABU's head) and
// without test-time noise. For each chunk fn gets, in a scope freed when it returns and
// with gradients off, the model, its input [K, B, C, H, W] normalized as in evaluation,
// and the chunk's clients (rows past valid repeat the last client to fill the stack). A
// strategy that predicts through a model of its own (EvalHooks.Predict: Ditto, APFL, pFedMe) is
// refused: its Forward is not what it predicts with.
func (r *Run) Inspect(ids []int, samples [][]int, fn func(s *cuda.Scope, m model.Model, x *cuda.Tensor, clients []int, valid int) error) error {
	if r.hooks.eval.Predict != nil {
		return fmt.Errorf("fl: %s predicts through a model of its own; it cannot be inspected", r.strat.Name())
	}
	if r.fed.Test == nil {
		return fmt.Errorf("fl: inspect: the run's data are not images")
	}
	if len(ids) == 0 || len(ids) != len(samples) {
		return fmt.Errorf("fl: inspect: %d clients, %d sample lists", len(ids), len(samples))
	}
	for i, c := range ids {
		if c < 0 || c >= len(r.fed.Part.Test) {
			return fmt.Errorf("fl: inspect: client %d of %d", c, len(r.fed.Part.Test))
		}
		if len(samples[i]) == 0 || len(samples[i]) != len(samples[0]) {
			return fmt.Errorf("fl: inspect: client %d is given %d images, client %d %d", c, len(samples[i]), ids[0], len(samples[0]))
		}
		for _, j := range samples[i] {
			if j < 0 || j >= r.fed.Test.N {
				return fmt.Errorf("fl: inspect: test image %d of %d", j, r.fed.Test.N)
			}
		}
	}
	return r.chunks(ids, func(chunk []int, valid int) error {
		s := cuda.NewScope()
		defer s.Close()
		s.SetGradEnabled(false)
		r.load(s, r.evalM, chunk)
		if r.hooks.gen != nil {
			r.loadGenerated(s, r.evalM, r.hooks.gen.Generate(s, cuda.FromSlice(s, r.cfg.Device, ids64(chunk))))
		}
		parts := make([][]int, len(chunk))
		for i, c := range chunk {
			parts[i] = samples[slices.Index(ids, c)]
		}
		plan, err := data.NewPlan(chunk, parts, data.PlanConfig{Epochs: 1, Batch: len(samples[0]), Round: -1})
		if err != nil {
			return err
		}
		dp, err := plan.Upload(r.cfg.Device, nil)
		if err != nil {
			return err
		}
		defer dp.Close()
		x := r.input(s, r.test.Batch(s, dp, 0).X)
		if err := s.Err(); err != nil {
			return err
		}
		return fn(s, r.evalM, x, chunk, valid)
	})
}

// Federated is the run's data: the images and their partition over the clients.
func (r *Run) Federated() *data.Federated { return r.fed }
