package fl

import (
	"fmt"
	"slices"

	"pfl/cuda"
)

// The server update (step 3 of the lifecycle, lifecycle.go): the generator learns, the
// shared parameters are averaged, the personal rows go back to the store; across processes
// every sum over clients is all-reduced.

// generate makes the generated parameters of the clients ids (GenerateHooks.Generate),
// with the graph back to the server's parameters that LearnSum differentiates; none without
// a generator.
func (r *Run) generate(s *cuda.Scope, ids []int) ([]*cuda.Tensor, error) {
	if r.hooks.gen == nil {
		return nil, nil
	}
	generated := r.hooks.gen.Generate(s, cuda.FromSlice(s, r.cfg.Device, ids64(ids)))
	if len(generated) != len(r.genIdx) {
		return nil, fmt.Errorf("fl: %s generated %d parameters, want %d", r.strat.Name(), len(generated), len(r.genIdx))
	}
	return generated, nil
}

// shareRows keeps the rows [lo, lo+n) of the generated parameters of all the round's
// clients: this rank's share (all of them in one process). Every rank generates for all
// the round's clients, as one process does, and not for its share alone: a matrix
// product's bits may depend on its row count (OpenBLAS's generic kernels, which it runs on
// CPUs it does not know, take another path for one row than for three), and the rows a
// rank trains must be the ones one process would train.
func shareRows(s *cuda.Scope, generated []*cuda.Tensor, lo, n int) []*cuda.Tensor {
	if len(generated) == 0 || generated[0].Size(0) == int64(n) {
		return generated
	}
	out := make([]*cuda.Tensor, len(generated))
	for i, g := range generated {
		out[i] = s.Narrow(g, 0, int64(lo), int64(n))
	}
	return out
}

// aggregate averages the shared parameters over the round's clients ids (weights m_k/M, or
// the strategy's: ServerHooks.Weights; a client of ids outside server, the clients the server update
// reads, weighs 0) into the global model, writes the personal rows back to the store, and
// lets a generative strategy learn from the generated parameters' change.
//
// Across processes (below) the stacked model holds this rank's share of ids; the
// weights stay those of the whole round, the sums over clients are all-reduced, and the
// personal rows of every trained client reach every rank's store.
func (r *Run) aggregate(s *cuda.Scope, ids, server []int, generated []*cuda.Tensor) error {
	var sizes, at []int // the server's clients' sample counts and positions in ids
	for i, c := range ids {
		if slices.Contains(server, c) {
			sizes, at = append(sizes, len(r.fed.Part.Train[c])), append(at, i)
		}
	}
	weights := make([]float64, len(ids))
	for j, v := range r.hooks.weights(sizes) {
		weights[at[j]] = v
	}
	local, lo := r.localShare(ids)
	w := cuda.FromSlice(s, r.cfg.Device, weights[lo:lo+len(local)])
	if r.hooks.gen != nil {
		if err := r.learn(s, generated, weights, lo); err != nil {
			return err
		}
	}
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(true)
	idx := cuda.FromSlice(s, r.cfg.Device, ids64(ids))
	global := r.global.Params().List
	var dst, src, pers []*cuda.Tensor
	var persIdx []int
	for i, p := range r.stacked.Params().List {
		if r.isGen[i] {
			continue
		}
		if r.personal[i] {
			pers, persIdx = append(pers, p.T), append(persIdx, i)
		} else {
			dst, src = append(dst, global[i].T), append(src, p.T)
		}
	}
	if r.distributed() && len(pers) > 0 {
		var err error
		if pers, err = r.gatherRows(s, pers, len(ids), lo); err != nil {
			return err
		}
	}
	for j, i := range persIdx {
		s.IndexCopy(r.store[i], 0, idx, pers[j])
	}
	if aggMean := r.hooks.server.AggregateMean; aggMean != nil && r.distributed() && len(dst) > 0 {
		means := make([]*cuda.Tensor, len(dst))
		for i, g := range dst {
			means[i] = s.Zeros(g.DType(), g.Device(), g.Shape()...)
		}
		s.ForeachWeightedSum(means, src, w)
		if err := s.Err(); err != nil {
			return err
		}
		if err := r.allReduce(means...); err != nil {
			return err
		}
		if err := aggMean(s, dst, means); err != nil {
			return fmt.Errorf("fl: %s: server update: %w", r.strat.Name(), err)
		}
		return s.Err()
	}
	if aggregate := r.hooks.server.Aggregate; aggregate != nil {
		if err := aggregate(s, dst, src, w); err != nil {
			return fmt.Errorf("fl: %s: server update: %w", r.strat.Name(), err)
		}
		return s.Err()
	}
	if err := AverageInto(s, dst, src, w); err != nil {
		return err
	}
	return r.allReduce(dst...)
}

// learn updates the generator from the round's clients' trained rows (GenerateHooks.LearnSum,
// LearnApply); generated holds all the round's clients' generated parameters, weights their
// weights, and this rank trained the rows from lo. Across processes every rank first gathers
// every client's trained rows and then differentiates the whole round as one process does:
// summing the ranks' partial vector-Jacobian products instead would add the clients' terms
// in another order than one matrix product does, and the generator's bits, hence every
// later round's, would depend on the number of ranks.
func (r *Run) learn(s *cuda.Scope, generated []*cuda.Tensor, weights []float64, lo int) error {
	trained := make([]*cuda.Tensor, len(r.genIdx))
	for j, i := range r.genIdx {
		trained[j] = r.stacked.Params().List[i].T
	}
	if r.distributed() {
		var err error
		if trained, err = r.gatherRows(s, trained, len(weights), lo); err != nil {
			return err
		}
	}
	sum := r.hooks.gen.LearnSum(s, generated, trained, cuda.FromSlice(s, r.cfg.Device, weights))
	r.hooks.gen.LearnApply(s, sum)
	return s.Err()
}

// Training across processes (Config.Group with World > 1). Every rank holds the whole run:
// the global model, the store of every client's personal rows and the strategy's server
// state, all replicated and kept equal bit for bit. Every rank draws the same sampled
// clients from the run's streams, trains its contiguous share of them as one stacked
// model, and the server update, a sum over the round's clients, becomes partial sums
// all-reduced across the ranks:
//   - the shared parameters: Σ_k (m_k/M) θ_k over the rank's clients, then all-reduced
//     (an AggregateMean hook, pFedMe's, then moves the global model towards that mean);
//   - a generator's update (FedTP, TransFed, pFedHN): every rank generates for all the
//     round's clients, gathers every client's trained rows (exactly, as the personal rows
//     below) and computes the whole vector-Jacobian product Σ_k (m_k/M) (∂W_k/∂φ)ᵀ ΔW_k
//     itself (learn), so the one optimizer step every rank takes has one process's bits;
//   - the personal rows: each rank writes its trained clients' rows into a zero buffer of
//     the round's K rows and the buffers are all-reduced, which is exact (x + 0 = x), so
//     every rank's store gets every trained client's rows. Replicating the store costs
//     N rows per personal parameter on every rank, what one process holds anyway; in
//     exchange a rank needs nothing but the collectives of its round and a checkpoint
//     (written by rank 0, read by all) does not depend on the number of ranks.
// Evaluation splits the clients into contiguous ranges, one per rank, and all-reduces
// per-client counts the same exact way; under FedPerfix's protocol each rank first
// evaluates the clients it trained, and those results are gathered alike. The all-reduce of a Gloo or NCCL group hands
// every rank the same bits, so the replicas cannot drift apart.

// share is rank's contiguous part [lo, hi) of n items split over world ranks; the parts'
// sizes differ by at most one.
func share(n, rank, world int) (lo, hi int) {
	return rank * n / world, (rank + 1) * n / world
}

// distributed reports whether the run trains across processes.
func (r *Run) distributed() bool { return r.cfg.Group != nil && r.cfg.Group.World() > 1 }

// checkShardable refuses what training across processes cannot run yet, naming it.
func (r *Run) checkShardable() error {
	if !r.distributed() {
		return nil
	}
	g := r.cfg.Group
	name := r.strat.Name()
	switch {
	case r.cfg.PerRound < g.World():
		return fmt.Errorf("fl: %d clients per round cannot be shared by %d processes (WORLD_SIZE): each needs at least one", r.cfg.PerRound, g.World())
	case r.cfg.Sequential:
		return fmt.Errorf("fl: train.sequential trains in one process; unset it or set WORLD_SIZE=1")
	case r.hooks.server.Aggregate != nil && r.hooks.server.AggregateMean == nil:
		return fmt.Errorf("fl: %s has its own server update, which is not split across processes yet; run it with WORLD_SIZE=1", name)
	case len(r.fed.Part.Novel) > 0:
		return fmt.Errorf("fl: novel clients are fine-tuned in one process; run with WORLD_SIZE=1 or without data.novel")
	}
	return nil
}

// localShare is the part of the round's clients ids this rank trains (all of them in one
// process) and its offset in ids.
func (r *Run) localShare(ids []int) (local []int, lo int) {
	if !r.distributed() {
		return ids, 0
	}
	lo, hi := share(len(ids), r.cfg.Group.Rank(), r.cfg.Group.World())
	return ids[lo:hi], lo
}

// allReduce sums ts across the ranks in place (nothing in one process).
func (r *Run) allReduce(ts ...*cuda.Tensor) error {
	if !r.distributed() || len(ts) == 0 {
		return nil
	}
	if err := r.cfg.Group.AllReduceSum(ts...); err != nil {
		return fmt.Errorf("fl: %w", err) // the error names the rank and its lost peers
	}
	return nil
}

// allReduceFloats sums vs across the ranks (in float64 on the group's device).
func (r *Run) allReduceFloats(vs ...*float64) error {
	if !r.distributed() {
		return nil
	}
	host := make([]float64, len(vs))
	for i, v := range vs {
		host[i] = *v
	}
	if err := r.allReduceHost(host); err != nil {
		return err
	}
	for i, v := range vs {
		*v = host[i]
	}
	return nil
}

// allReduceHost sums the host values v across the ranks in place, in float64 on the
// group's device.
func (r *Run) allReduceHost(v []float64) error {
	s := cuda.NewScope()
	defer s.Close()
	t := cuda.FromSlice(s, r.cfg.Group.Device(), v)
	if err := s.Err(); err != nil {
		return err
	}
	if err := r.allReduce(t); err != nil {
		return err
	}
	sum, err := t.Float64s()
	if err != nil {
		return err
	}
	copy(v, sum)
	return nil
}

// gatherRows returns, on every rank, the [K, ...] rows of all the round's K clients of
// the stacked parameters local ([k_r, ...], this rank's clients, at offset lo): each rank
// writes its rows into zeros and the buffers are all-reduced, exact since the other
// ranks add zeros.
func (r *Run) gatherRows(s *cuda.Scope, local []*cuda.Tensor, k, lo int) ([]*cuda.Tensor, error) {
	out := make([]*cuda.Tensor, len(local))
	for i, t := range local {
		shape := append([]int64{int64(k)}, t.Shape()[1:]...)
		out[i] = s.Zeros(t.DType(), t.Device(), shape...)
		s.CopyFrom(s.Narrow(out[i], 0, int64(lo), t.Size(0)), t)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return out, r.allReduce(out...)
}

// gatherEval gives every rank the results of all's clients in res, each rank having
// evaluated its clients mine: one all-reduce of the per-client fields, zero for the
// clients a rank did not evaluate (exact, as gatherRows). Nothing in one process.
func (r *Run) gatherEval(res *EvalResult, mine, all []int) error {
	if !r.distributed() {
		return nil
	}
	n := len(res.Count)
	v := make([]float64, 4*n)
	for _, c := range mine {
		v[c], v[n+c], v[2*n+c], v[3*n+c] = float64(res.Correct[c]), float64(res.Count[c]), res.Accuracy[c], res.Loss[c]
	}
	if err := r.allReduceHost(v); err != nil {
		return err
	}
	for _, c := range all {
		res.Correct[c], res.Count[c], res.Accuracy[c], res.Loss[c] = int(v[c]), int(v[n+c]), v[2*n+c], v[3*n+c]
	}
	return nil
}
