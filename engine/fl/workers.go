package fl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"pfl/cuda"
	"pfl/engine/model"
)

// Client groups on threads (Config.Workers, Config.Stack). On the CPU a second intra-op
// thread gains little on these models' many small stacked kernels (bench/RESULTS.md:
// 1.02–1.09×), while two single-threaded stacks side by side each run at nearly full
// speed. So a round's clients are split into contiguous groups, each trained as a stacked
// model of its own, and Workers OS threads take the groups in turn; the trained rows are
// copied back into the round's stacked model in client order, and everything after (the
// server update, the personal store, the hypernetwork's learning) runs on the round's
// thread as with one stack. A client's training reads only its own rows, batches and
// dropout stream, every kernel computes a client's rows alike whatever the stack's size
// (batched matmuls per slice, row-wise norms, one convolution per client on the CPU), and
// the training loss is summed client by client in the round's order, so a run gives the
// same bits for any number of workers and any group size (TestWorkersBitIdentical).
//
// Small groups hold few clients' activations at once: a round's training memory is that
// of Workers groups, not of all K clients. By default each client is a group of its own
// when several workers train.
//
// Evaluation shares its chunks of clients among the workers the same way, each worker
// with an evaluation model of its own.

// groups are a run's client groups and the models its worker threads use.
type groups struct {
	train []model.Model // the groups' stacked models, in client order
	eval  []model.Model // one evaluation model (EvalChunk clients) per worker thread
}

// Workers is how many client groups a round trains at once (1: one at a time).
func (r *Run) Workers() int { return max(len(r.groups.eval), 1) }

// GroupSizes splits k clients into contiguous groups of at most Stack clients each; Stack
// 0 is one client per group when several workers train (the workers then take the
// clients one by one, which balances clients of unequal data better than fixed shares and
// was as fast or faster in every case measured, bench/RESULTS.md), else one stack. The
// sizes differ by at most one.
func (c Config) GroupSizes(k int) []int {
	n := 1
	switch {
	case c.Stack > 0:
		n = (k + c.Stack - 1) / c.Stack
	case c.Workers > 1:
		n = k
	}
	sizes := make([]int, n)
	for g := range n {
		lo, hi := share(k, g, n)
		sizes[g] = hi - lo
	}
	return sizes
}

// GroupThreads is how many worker threads train groups of the sizes GroupSizes(k) gives:
// Workers, at most one per group (1: the groups in turn on the round's thread).
func (c Config) GroupThreads(k int) int {
	return min(max(c.Workers, 1), len(c.GroupSizes(k)))
}

// buildGroups makes the models of the groups sharing k clients per round, and one
// evaluation model per worker thread beyond the first when several threads train;
// nothing for a single group.
func (r *Run) buildGroups(ctx context.Context, k int, g *cuda.Generator) error {
	sizes := r.cfg.GroupSizes(k)
	if len(sizes) < 2 {
		return nil
	}
	for _, size := range sizes {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := r.build(size, g)
		if err != nil {
			return err
		}
		r.groups.train = append(r.groups.train, m)
	}
	if threads := r.cfg.GroupThreads(k); threads > 1 {
		for range threads {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, err := r.build(r.cfg.EvalChunk, g)
			if err != nil {
				return err
			}
			r.groups.eval = append(r.groups.eval, m)
		}
	}
	return nil
}

// closeGroups frees the groups' models.
func (r *Run) closeGroups() {
	for _, m := range append(r.groups.train, r.groups.eval...) {
		if m != nil {
			m.Close()
		}
	}
	r.groups = groups{}
}

// parallel runs f(w, i) for i = 0 … n-1 on threads goroutines (w = 0 … threads-1), each
// locked to an OS thread of its own (see lockThread: each worker's autograd graphs are
// built and differentiated on one thread), a worker taking the next i when done with its
// last. It returns the error of the lowest i that failed. threads = 1 runs them in order
// here.
func parallel(threads, n int, f func(w, i int) error) error {
	errs := make([]error, n)
	if threads < 2 {
		for i := range n {
			if errs[i] = f(0, i); errs[i] != nil {
				return errs[i]
			}
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer lockThread()()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				errs[i] = f(w, i)
			}
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

// trainGroups is localTrain of the round's clients ids over the groups, whose trained rows
// it then copies into the stacked model: per phase each client's summed losses in the
// order of ids, and the (client, step) pairs. generated ([K, ...] rows of the generated
// parameters, with the graph back to the server's parameters) is read detached: the graph
// stays on the round's thread for the server's learning.
func (r *Run) trainGroups(s *cuda.Scope, ids []int, generated []*cuda.Tensor, round int, met *RoundMetrics) ([][]float64, float64, error) {
	n := len(r.groups.train)
	type result struct {
		losses [][]float64
		pairs  float64
		met    RoundMetrics
	}
	results := make([]result, n)
	lo := make([]int, n+1)
	for g, m := range r.groups.train {
		lo[g+1] = lo[g] + int(m.Params().List[0].T.Size(0))
	}
	rows := make([][]*cuda.Tensor, n)
	s.SetGradEnabled(false)
	for g := range n {
		for _, t := range generated {
			rows[g] = append(rows[g], s.Narrow(s.Detach(t), 0, int64(lo[g]), int64(lo[g+1]-lo[g])))
		}
	}
	s.SetGradEnabled(true)
	if err := s.Err(); err != nil {
		return nil, 0, err
	}
	err := parallel(r.Workers(), n, func(_, g int) error {
		gs := cuda.NewScope()
		defer gs.Close()
		res := &results[g]
		var err error
		res.losses, res.pairs, err = r.localTrain(gs, r.groups.train[g], ids[lo[g]:lo[g+1]], rows[g], round, &res.met)
		if err == nil {
			err = gs.Err()
		}
		if r.Workers() < 2 {
			r.phaseDone() // one group at a time: free its activations before the next
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
		data += res.met.Time.Data
	}
	met.Time.Data += data / time.Duration(r.Workers()) // the workers prepare their data at once
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(true)
	for g, m := range r.groups.train {
		for j, p := range r.stacked.Params().List {
			s.CopyFrom(s.Narrow(p.T, 0, int64(lo[g]), int64(lo[g+1]-lo[g])), m.Params().List[j].T)
		}
	}
	return losses, pairs, s.Err()
}

// chunksParallel is chunks with the chunks shared among the worker threads in turn: f gets
// the worker's evaluation model. One worker runs them in order on this thread with r.evalM.
func (r *Run) chunksParallel(clients []int, f func(m model.Model, ids []int, valid int) error) error {
	if len(r.groups.eval) < 2 {
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
	return parallel(min(len(r.groups.eval), len(all)), len(all), func(w, i int) error {
		return f(r.groups.eval[w], all[i].ids, all[i].valid)
	})
}
