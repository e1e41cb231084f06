package fl

import (
	"sync"
	"time"

	"pfl/cuda"
	"pfl/engine/model"
)

// Client groups on threads (Config.Workers). On the CPU a second intra-op thread gains
// little on these models' many small stacked kernels (bench/RESULTS.md: 1.02–1.09×),
// while two single-threaded stacks side by side each run at nearly full speed. So a
// round's clients are split into contiguous groups, each trained as a stacked model of
// its own on its own OS thread; the trained rows are copied back into the round's stacked
// model in client order, and everything after (the server update, the personal store,
// the hypernetwork's learning) runs on the round's thread as with one stack. A client's
// training reads only its own rows, batches and dropout stream, and the training loss is
// summed client by client in the round's order, so wherever a model's per-client kernels
// do not depend on how many clients are stacked (the ViTs and FocalNet: batched matmuls,
// row-wise norms; tested bit for bit) the run is the same for every number of workers.
// The ConvNet's grouped convolutions round differently for different stack sizes, so its
// last digits depend on the number of workers as they do on the stack size.
//
// Evaluation shares its chunks of clients among the workers the same way, each worker
// with an evaluation model of its own.

// worker is one client group's models.
type worker struct {
	train model.Model // the group's share of the round's clients (rows in client order)
	eval  model.Model // EvalChunk clients
}

// Workers is how many client groups a round trains at once (1: one stack).
func (r *Run) Workers() int { return max(len(r.workers), 1) }

// buildWorkers makes the models of min(Workers, k) groups sharing k clients per round;
// nothing for one group.
func (r *Run) buildWorkers(k int, g *cuda.Generator) error {
	n := min(max(r.cfg.Workers, 1), k)
	if n < 2 {
		return nil
	}
	for w := range n {
		lo, hi := share(k, w, n)
		var wk worker
		var err error
		if wk.train, err = r.build(hi-lo, g); err != nil {
			return err
		}
		r.workers = append(r.workers, wk) // so that Close frees it
		if r.workers[w].eval, err = r.build(r.cfg.EvalChunk, g); err != nil {
			return err
		}
	}
	return nil
}

// closeWorkers frees the workers' models.
func (r *Run) closeWorkers() {
	for _, wk := range r.workers {
		for _, m := range []model.Model{wk.train, wk.eval} {
			if m != nil {
				m.Close()
			}
		}
	}
	r.workers = nil
}

// parallel runs f(0) … f(n-1), each on a goroutine locked to an OS thread of its own (see
// lockThread: each worker's autograd graphs are built and differentiated on one thread),
// and returns the error of the lowest-numbered f that failed. n = 1 runs f(0) here.
func parallel(n int, f func(w int) error) error {
	if n == 1 {
		return f(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer lockThread()()
			errs[w] = f(w)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// trainGroups is localTrain of the round's clients ids split over the workers, whose
// trained rows it then copies into the stacked model: per phase each client's summed
// losses in the order of ids, and the (client, step) pairs. generated ([K, ...] rows of
// the generated parameters, with the graph back to the server's parameters) is read
// detached: the graph stays on the round's thread for the server's learning.
func (r *Run) trainGroups(s *cuda.Scope, ids []int, generated []*cuda.Tensor, round int, met *RoundMetrics) ([][]float64, float64, error) {
	n := len(r.workers)
	type result struct {
		losses [][]float64
		pairs  float64
		met    RoundMetrics
	}
	results := make([]result, n)
	rows := make([][]*cuda.Tensor, n)
	s.SetGradEnabled(false)
	for w := range n {
		lo, hi := share(len(ids), w, n)
		for _, g := range generated {
			rows[w] = append(rows[w], s.Narrow(s.Detach(g), 0, int64(lo), int64(hi-lo)))
		}
	}
	s.SetGradEnabled(true)
	if err := s.Err(); err != nil {
		return nil, 0, err
	}
	err := parallel(n, func(w int) error {
		lo, hi := share(len(ids), w, n)
		gs := cuda.NewScope()
		defer gs.Close()
		res := &results[w]
		var err error
		res.losses, res.pairs, err = r.localTrain(gs, r.workers[w].train, ids[lo:hi], rows[w], round, &res.met)
		if err == nil {
			err = gs.Err()
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	var losses [][]float64
	var pairs float64
	var data time.Duration
	for _, res := range results {
		for p, l := range res.losses {
			if p == len(losses) {
				losses = append(losses, nil)
			}
			losses[p] = append(losses[p], l...)
		}
		pairs += res.pairs
		met.Samples += res.met.Samples
		data = max(data, res.met.Time.Data) // the workers prepare their data at once
	}
	met.Time.Data += data
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(true)
	for w, wk := range r.workers {
		lo, hi := share(len(ids), w, n)
		for j, p := range r.stacked.Params().List {
			s.CopyFrom(s.Narrow(p.T, 0, int64(lo), int64(hi-lo)), wk.train.Params().List[j].T)
		}
	}
	return losses, pairs, s.Err()
}

// chunksParallel is chunks with the chunks shared among the workers (worker w takes chunks
// w, w+n, …, each in turn): f gets the worker's number for its evaluation model. One
// worker, or none, runs them in order on this thread with r.evalM.
func (r *Run) chunksParallel(clients []int, f func(m model.Model, ids []int, valid int) error) error {
	n := len(r.workers)
	if n < 2 {
		return r.chunks(clients, func(ids []int, valid int) error { return f(r.evalM, ids, valid) })
	}
	type chunk struct {
		ids   []int
		valid int
	}
	var all []chunk
	if err := r.chunks(clients, func(ids []int, valid int) error {
		all = append(all, chunk{ids, valid})
		return nil
	}); err != nil {
		return err
	}
	return parallel(min(n, len(all)), func(w int) error {
		for i := w; i < len(all); i += n {
			if err := f(r.workers[w].eval, all[i].ids, all[i].valid); err != nil {
				return err
			}
		}
		return nil
	})
}
