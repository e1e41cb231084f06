package fl

import (
	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// ClientsAtOnce is how many clients' activations a round's training holds at once: the
// round's stack, or with client groups (workers.go) the largest group times the threads.
func (r *Run) ClientsAtOnce() int {
	if len(r.groups.train) < 2 {
		if r.cfg.Sequential {
			return 1
		}
		return int(r.stacked.Params().List[0].T.Size(0))
	}
	largest := 0
	for _, m := range r.groups.train {
		largest = max(largest, int(m.Params().List[0].T.Size(0)))
	}
	return largest * r.Workers()
}

// ProbeActivations measures the bytes one client's training step takes at its peak besides
// the parameters, on the CPU, for a batch of samples samples (at most the client's): a
// one-client model (as the run builds and wraps it) takes one training batch of the first
// trainable client, forward, loss and the gradients of its trainable parameters, and the
// high-water mark of the bytes CPU tensors hold over that step (the cache's large blocks
// and glibc's small ones, HostCacheStats.PeakBytes) less what they held before is what a
// client's step adds: what autograd keeps for the backward pass, the ops' transient
// buffers and the gradients (which the memory floor counts too). It touches no stream or
// tensor of the run. False on CUDA, with the cache off (PFL_CPU_CACHE=0), or on an error
// (the run reports errors itself).
//
// A probe takes what it measures: the caller probes small batches first and extrapolates
// before it probes the run's own batch (experiment's memoryExpected).
func (r *Run) ProbeActivations(samples int) (float64, bool) {
	if r.cfg.Device.IsCUDA() || len(r.trainable) == 0 {
		return 0, false
	}
	if _, ok := cuda.HostCache(); !ok {
		return 0, false
	}
	defer lockThread()()
	defer cuda.ReleaseHostCache()
	seed := rng.Derive(rng.Key{Seed: r.cfg.Seed, Purpose: "memory-probe", Round: -1, Client: -1})
	g, err := cuda.NewGenerator(seed, r.cfg.Device)
	if err != nil {
		return 0, false
	}
	defer g.Close()
	m, err := r.build(1, g)
	if err != nil {
		return 0, false
	}
	defer m.Close()
	c := r.trainable[0]
	plan, err := data.NewPlan([]int{c}, [][]int{r.fed.Part.Train[c]}, data.PlanConfig{Epochs: 1, Batch: max(samples, 1), Seed: seed, Round: -1})
	if err != nil {
		return 0, false
	}
	var noise []float64
	if r.fed.Part.Noise != nil {
		noise = []float64{r.fed.Part.Noise[c]}
	}
	dp, err := plan.Upload(r.cfg.Device, noise)
	if err != nil {
		return 0, false
	}
	defer dp.Close()
	s := cuda.NewScope()
	defer s.Close()
	b := r.train.Batch(s, dp, 0)
	batch := Batch{X: r.input(s, b.X), Y: b.Y, Mask: b.Mask, Clients: []int{c}, Rows: cuda.FromSlice(s, r.cfg.Device, []int64{0})}
	if s.Err() != nil {
		return 0, false
	}
	cuda.ResetHostCachePeak()
	before, _ := cuda.HostCache()
	st := s.Child()
	defer st.Close()
	r.autocast(st)
	loss := r.loss(st, m, batch, &model.Pass{Train: true, Gens: []*cuda.Generator{g}, Mask: b.Mask})
	if loss == nil || st.Err() != nil {
		return 0, false
	}
	st.Grad([]*cuda.Tensor{st.Sum(loss, false)}, nil, model.Tensors(m.Params().Trainable()), cuda.GradOptions{AllowUnused: true})
	if st.Err() != nil {
		return 0, false
	}
	after, _ := cuda.HostCache()
	return float64(max(after.PeakBytes-before.LiveBytes-before.SmallBytes, 0)), true
}
