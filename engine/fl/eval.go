package fl

import (
	"fmt"
	"math"
	"slices"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// EvalResult is every client's personalized model on its own test split. A prediction is
// one test sample's label, or one character of a text sample.
type EvalResult struct {
	Correct, Count []int     // per client: correct predictions, predictions
	Accuracy       []float64 // per client
	Loss           []float64 // per client mean test loss per prediction
	// Over the clients that train (novel clients, held out of training, are listed per
	// client but left out here: FineTuneNovel reports them):
	Micro     float64 // Σ correct / Σ predictions
	Mean, Std float64 // of the clients' accuracies
}

// Evaluate runs every client's personalized model (global shared part + its personal
// rows) on its test split, EvalChunk clients per stacked pass.
func (r *Run) Evaluate() (EvalResult, error) {
	defer lockThread()() // its fine-tuning differentiates (see lockThread)
	res := newEvalResult(len(r.fed.Part.Test))
	if err := r.evaluateInto(&res, nil); err != nil {
		return res, err
	}
	res.summarize(r.trainable)
	return res, nil
}

// evaluateInto evaluates every client but those in skip into res.
func (r *Run) evaluateInto(res *EvalResult, skip []int) error {
	var clients []int
	for c := range r.fed.Part.Test {
		if !slices.Contains(skip, c) {
			clients = append(clients, c)
		}
	}
	if len(clients) == 0 {
		return nil
	}
	if r.distributed() {
		return r.evaluateShared(res, clients)
	}
	return r.chunksParallel(clients, func(m model.Model, ids []int, valid int) error {
		e, err := r.evalChunk(m, ids)
		for i := 0; err == nil && i < valid; i++ {
			res.set(ids[i], e, i)
		}
		return err
	})
}

// evaluateTrained evaluates the round's trained clients ids (the stacked model's rows, in
// order) before aggregation, as FedPerfix's official code tests a sampled client right
// after its local training, into res.
func (r *Run) evaluateTrained(res *EvalResult, ids []int) error {
	pos := make([]int, len(ids))
	for i := range pos {
		pos[i] = i
	}
	return r.chunksParallel(pos, func(m model.Model, rows []int, valid int) error {
		s := cuda.NewScope()
		defer s.Close()
		s.SetGradEnabled(false)
		idx := cuda.FromSlice(s, r.cfg.Device, ids64(rows))
		trained := r.stacked.Params().List
		for i, p := range m.Params().List {
			s.CopyFrom(p.T, s.IndexSelect(trained[i].T, 0, idx))
		}
		s.SetGradEnabled(true)
		clients := make([]int, len(rows))
		for i, p := range rows {
			clients[i] = ids[p]
		}
		e, err := r.fineTuneAndEval(s, m, clients)
		for i := 0; err == nil && i < valid; i++ {
			res.set(clients[i], e, i)
		}
		return err
	})
}

// evaluateBeforeAggregation is the round's evaluation under the fedperfix protocol, run
// before the server update as FedPerfix's official code runs it (system/main.py: the
// workers' thread.py tests every client, trained or not, right after the sampled ones'
// local training, and only then do receive_models and aggregate_parameters run): the
// round's trained clients (all of them; local, this process's share, are the stacked
// model's rows) with their trained models, every other client with the global shared part
// the round started from, i.e. the previous round's (send_models handed every client the
// global model before the round), and its own personal part.
func (r *Run) evaluateBeforeAggregation(local, trained []int) (EvalResult, error) {
	res := newEvalResult(len(r.fed.Part.Test))
	if err := r.evaluateTrained(&res, local); err != nil {
		return res, err
	}
	if err := r.gatherEval(&res, local, trained); err != nil {
		return res, err
	}
	// the global model and the other clients' personal rows are as the round found them:
	// aggregate has not written the round's update yet
	if err := r.evaluateInto(&res, trained); err != nil {
		return res, err
	}
	res.summarize(r.trainable)
	return res, nil
}

func newEvalResult(n int) EvalResult {
	return EvalResult{Correct: make([]int, n), Count: make([]int, n), Accuracy: make([]float64, n), Loss: make([]float64, n)}
}

// set records row i of a chunk's counts as client c's result.
func (res *EvalResult) set(c int, e evalCounts, i int) {
	res.Correct[c] = int(math.Round(e.correct[i]))
	res.Count[c] = int(math.Round(e.count[i]))
	res.Accuracy[c] = e.correct[i] / e.count[i]
	res.Loss[c] = e.loss[i] / e.count[i]
}

// summarize computes Micro, Mean and Std over the clients clients.
func (res *EvalResult) summarize(clients []int) {
	var totalC, totalN int
	var sum, sum2 float64
	for _, c := range clients {
		totalC += res.Correct[c]
		totalN += res.Count[c]
		sum += res.Accuracy[c]
		sum2 += res.Accuracy[c] * res.Accuracy[c]
	}
	n := float64(len(clients))
	res.Micro = float64(totalC) / float64(totalN)
	res.Mean = sum / n
	res.Std = math.Sqrt(math.Max(sum2/n-res.Mean*res.Mean, 0))
}

// evalChunk returns the number of correct predictions and the summed loss of each of the
// chunk's clients on the evaluation model m (r.evalM, or a worker's).
func (r *Run) evalChunk(m model.Model, ids []int) (evalCounts, error) {
	s := cuda.NewScope()
	defer s.Close()
	r.load(s, m, ids)
	if r.hooks.gen != nil {
		s.SetGradEnabled(false)
		r.loadGenerated(s, m, r.hooks.gen.Generate(s, cuda.FromSlice(s, r.cfg.Device, ids64(ids))))
		s.SetGradEnabled(true)
	}
	return r.fineTuneAndEval(s, m, ids)
}

// fineTuneAndEval fine-tunes the evaluation model m's rows (EvalHooks.FineTune; the change is not
// kept: m's rows are reloaded before their next use) and evaluates them.
func (r *Run) fineTuneAndEval(s *cuda.Scope, m model.Model, ids []int) (evalCounts, error) {
	if ft := r.hooks.eval.FineTune; ft != nil {
		if _, _, err := r.trainPhase(s, m, ids, r.fed.Part.Train, len(r.History), FineTunePhase, *ft, nil); err != nil {
			return evalCounts{}, err
		}
	}
	return r.evalModel(s, m, ids)
}

// evalModel evaluates m's rows as they are (row i is client ids[i]) on the clients' test
// splits: the number of correct predictions and the summed loss of each client.
func (r *Run) evalModel(s *cuda.Scope, m model.Model, ids []int) (evalCounts, error) {
	grad := s.GradEnabled()
	defer s.SetGradEnabled(grad)
	parts := make([][]int, len(ids))
	var noise []float64
	for i, c := range ids {
		if len(r.fed.Part.Test[c]) == 0 {
			return evalCounts{}, fmt.Errorf("fl: client %d has no test samples", c)
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
		return evalCounts{}, err
	}
	dp, err := plan.Upload(r.cfg.Device, noise)
	if err != nil {
		return evalCounts{}, err
	}
	defer dp.Close()
	s.SetGradEnabled(false)
	predict, err := r.predictor(s, m, ids)
	if err != nil {
		return evalCounts{}, err
	}
	k := int64(len(ids))
	hits := s.Zeros(cuda.Float64, r.cfg.Device, k)
	losses := s.Zeros(cuda.Float64, r.cfg.Device, k)
	counts := s.Zeros(cuda.Float64, r.cfg.Device, k)
	st := cuda.NewScope()
	defer st.Close()
	st.SetGradEnabled(false)
	for step := 0; step < plan.Steps; step++ {
		st.Reset()
		st.SetGradEnabled(false)
		b := r.test.Batch(st, dp, step)
		r.autocast(st)
		logits := predict(st, r.input(st, b.X))
		if r.cfg.Autocast != 0 {
			st.SetAutocast(cuda.Float32)
			logits = st.To(logits, cuda.Float32)
		}
		// a sample predicts one label (images) or one per position (text): count positions
		mask := st.Reshape(st.To(b.Mask, cuda.Float64), k, b.Mask.Size(1), 1)
		right := st.To(st.Eq(st.Argmax(logits, -1, false), b.Y), cuda.Float64)
		c := logits.Size(-1)
		per := st.CrossEntropy(st.Reshape(logits, -1, c), st.Reshape(b.Y, -1), nil, cuda.ReduceNone, 0)
		perSample := st.Reshape(st.To(per, cuda.Float64), k, b.Mask.Size(1), -1)
		sumRows := func(t *cuda.Tensor) *cuda.Tensor { return st.Sum(st.Reshape(t, k, -1), false, 1) }
		s.CopyFrom(hits, st.Add(hits, sumRows(st.Mul(st.Reshape(right, k, b.Mask.Size(1), -1), mask))))
		s.CopyFrom(losses, st.Add(losses, sumRows(st.Mul(perSample, mask))))
		s.CopyFrom(counts, st.Add(counts, st.MulScalar(sumRows(mask), float64(perSample.Size(2)))))
		if err := st.Err(); err != nil {
			return evalCounts{}, err
		}
	}
	if err := s.Err(); err != nil {
		return evalCounts{}, err
	}
	var e evalCounts
	for _, o := range []struct {
		t   *cuda.Tensor
		dst *[]float64
	}{{hits, &e.correct}, {counts, &e.count}, {losses, &e.loss}} {
		if *o.dst, err = o.t.Float64s(); err != nil {
			return evalCounts{}, err
		}
	}
	return e, nil
}

// predictor is how the clients ids predict from their inputs with m's rows (grad
// disabled): the KNN vote over their embedded training samples, the strategy's
// EvalHooks.Predict after Condition has seen those samples, or the model's forward.
func (r *Run) predictor(s *cuda.Scope, m model.Model, ids []int) (func(st *cuda.Scope, x *cuda.Tensor) *cuda.Tensor, error) {
	if knn := r.hooks.knn(); knn != nil {
		h, err := model.HeadedOf(m)
		if err != nil {
			return nil, err
		}
		mem, err := r.buildMemory(s, ids, func(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
			return h.Features(s, x, &model.Pass{})
		})
		if err != nil {
			return nil, err
		}
		return func(st *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
			f := h.Features(st, x, &model.Pass{})
			return knnLogits(st, *knn, mem, f, h.Head(st, f, &model.Pass{}))
		}, nil
	}
	if condition := r.hooks.eval.Condition; condition != nil {
		embed := r.hooks.eval.Embed
		train, err := r.buildMemory(s, ids, func(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor { return embed(s, m, x) })
		if err != nil {
			return nil, err
		}
		if err := condition(s, m, ids, *train); err != nil {
			return nil, fmt.Errorf("fl: %s: conditioning on the training samples of clients %v: %w", r.strat.Name(), ids, err)
		}
	}
	if predict := r.hooks.eval.Predict; predict != nil {
		return func(st *cuda.Scope, x *cuda.Tensor) *cuda.Tensor { return predict(st, m, x) }, nil
	}
	return func(st *cuda.Scope, x *cuda.Tensor) *cuda.Tensor { return m.Forward(st, x, &model.Pass{}) }, nil
}

// evalCounts is, per client of a chunk, the correct predictions, the predictions made
// (test samples, or characters for text) and their summed loss.
type evalCounts struct{ correct, count, loss []float64 }

// Train runs every round and returns the run's history (also in r.History).
func (r *Run) Train() ([]RoundMetrics, error) {
	for round := len(r.History); round < r.cfg.Rounds; round++ {
		if _, err := r.Round(round); err != nil {
			return r.History, err
		}
	}
	return r.History, nil
}

// evaluateShared is evaluateInto across processes: each rank evaluates its contiguous range
// of clients, in chunks, and every rank gets every client's counts through one all-reduce
// of zero-padded [3, N] counts (exact: the other ranks add zeros).
func (r *Run) evaluateShared(res *EvalResult, clients []int) error {
	g := r.cfg.Group
	n := len(r.fed.Part.Test)
	counts := make([]float64, 3*n) // correct, count, loss per client
	lo, hi := share(len(clients), g.Rank(), g.World())
	if mine := clients[lo:hi]; len(mine) > 0 {
		err := r.chunksParallel(mine, func(m model.Model, ids []int, valid int) error {
			e, err := r.evalChunk(m, ids)
			for i := 0; err == nil && i < valid; i++ {
				c := ids[i]
				counts[c], counts[n+c], counts[2*n+c] = e.correct[i], e.count[i], e.loss[i]
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	if err := r.allReduceHost(counts); err != nil {
		return err
	}
	e := evalCounts{correct: counts[:n], count: counts[n : 2*n], loss: counts[2*n:]}
	for _, c := range clients {
		res.set(c, e, c)
	}
	return nil
}
