package data

import (
	"fmt"
	"math"

	"pfl/cuda"
	"pfl/engine/rng"
)

// DeviceImages is an image set held on the device once, as uint8, with its labels:
// batches are gathered, converted, augmented, resized and normalized there, with no
// per-round host work beyond the index plan.
type DeviceImages struct {
	X          *cuda.Tensor // [N, C0, H0, W0] uint8 at the stored (native) geometry
	Y          *cuda.Tensor // [N] int64
	N, C, H, W int          // C, H, W: the batch geometry (after UploadConfig's resize and channels)
	Mean, Std  []float64    // per channel, on the [0, 1] scale

	mean, std *cuda.Tensor // [1, C or C0, 1, 1] float32, uploaded once
	rh, rwT   *cuda.Tensor // [H, H0] and [W0, W] float32 interpolation matrices; nil: no resize
}

// ChannelStats is the exact per-channel mean and standard deviation of x on the [0, 1]
// scale (the usual normalization constants, computed rather than copied).
func ChannelStats(x *Images) (mean, std []float64) {
	mean, std = make([]float64, x.C), make([]float64, x.C)
	plane := x.H * x.W
	for c := 0; c < x.C; c++ {
		var s, s2 float64
		for i := 0; i < x.N; i++ {
			for _, v := range x.Pixels[(i*x.C+c)*plane : (i*x.C+c+1)*plane] {
				f := float64(v) / 255
				s += f
				s2 += f * f
			}
		}
		n := float64(x.N * plane)
		mean[c] = s / n
		std[c] = math.Sqrt(max(s2/n-mean[c]*mean[c], 1e-12))
	}
	return mean, std
}

// Upload copies x to dev. mean and std (per channel, [0, 1] scale) normalize its batches,
// which keep the stored geometry: UploadWith with only Mean and Std set.
func Upload(x *Images, dev cuda.Device, mean, std []float64) (*DeviceImages, error) {
	return UploadWith(x, dev, UploadConfig{Mean: mean, Std: std})
}

// Close frees the device copy.
func (d *DeviceImages) Close() error {
	for _, t := range []*cuda.Tensor{d.X, d.Y, d.mean, d.std, d.rh, d.rwT} {
		t.Close()
	}
	return nil
}

// Augment is the CIFAR recipe: zero padding then a random crop back to size, and a random
// horizontal flip (torchvision's RandomCrop(padding) and RandomHorizontalFlip).
type Augment struct {
	Pad  int  // 0: no crop
	Flip bool // flip with probability 1/2
}

// Plan is one round of local training for K clients: for every step and client the
// samples of its batch, which slots hold a real sample, and the augmentation draws. Each
// client keeps its exact epoch semantics — ceil(m/B) steps per epoch, a reshuffle every
// epoch, the last batch partial (or, with PlanConfig.DropLast, dropped) — and a client
// whose epochs are done idles (mask 0) while larger clients go on. Every draw comes from
// the client's own (seed, purpose, round, client) stream, so a client's batches do not
// depend on the clients beside it.
type Plan struct {
	K, B, Steps int
	Clients     []int     // client ids, one per stack row
	ClientSteps []int     // steps each client really takes
	Index       []int64   // [Steps, K, B] sample indices (a valid index in masked slots)
	Mask        []float32 // [Steps, K, B] 1 for a real sample
	DY, DX      []int64   // [Steps, K, B] crop offsets in [0, 2·Pad]
	Flip        []bool    // [Steps, K, B]
	Config      PlanConfig
}

// PlanConfig says how a round's local training is batched.
type PlanConfig struct {
	Epochs, Batch int
	Shuffle       bool // false for evaluation: one pass in order
	Augment       Augment
	Seed          uint64
	Round         int
	Phase         int // phases of one round (FedRep's head and body) draw their own streams
	// DropLast, when positive, keeps only whole groups of DropLast batches in each epoch:
	// floor(m/(DropLast·B))·DropLast steps, every batch full, the samples after the last
	// whole group unseen that epoch. That is PyTorch's DataLoader(drop_last=True) with a
	// batch of DropLast·B, as PFLlib's clients load their training data (Per-FedAvg's
	// loader takes 2B and splits each batch in two: DropLast 2). A client with fewer
	// samples than a group takes no step, as its loader yields no batch. 0: keep the
	// last partial batch (drop_last=False).
	DropLast int
}

// NewPlan plans a round for the clients (ids) with the given sample lists.
func NewPlan(ids []int, parts [][]int, c PlanConfig) (*Plan, error) {
	if len(ids) != len(parts) || len(ids) == 0 {
		return nil, fmt.Errorf("data: plan: %d ids for %d clients", len(ids), len(parts))
	}
	if c.Epochs < 1 || c.Batch < 1 || c.Augment.Pad < 0 || c.DropLast < 0 {
		return nil, fmt.Errorf("data: plan: epochs %d and batch %d must be positive, pad %d and drop-last group %d not negative", c.Epochs, c.Batch, c.Augment.Pad, c.DropLast)
	}
	p := &Plan{K: len(ids), B: c.Batch, Clients: ids, ClientSteps: make([]int, len(ids)), Config: c}
	for i, part := range parts {
		if len(part) == 0 {
			return nil, fmt.Errorf("data: plan: client %d has no samples", ids[i])
		}
		p.ClientSteps[i] = c.Epochs * c.perEpoch(len(part))
		p.Steps = max(p.Steps, p.ClientSteps[i])
	}
	size := p.Steps * p.K * p.B
	p.Index, p.Mask = make([]int64, size), make([]float32, size)
	p.DY, p.DX, p.Flip = make([]int64, size), make([]int64, size), make([]bool, size)
	for i, part := range parts {
		suffix := ""
		if c.Phase > 0 {
			suffix = fmt.Sprintf("/phase%d", c.Phase)
		}
		order := rng.New(rng.Key{Seed: c.Seed, Purpose: "batch" + suffix, Round: c.Round, Client: ids[i]})
		aug := rng.New(rng.Key{Seed: c.Seed, Purpose: "augment" + suffix, Round: c.Round, Client: ids[i]})
		perEpoch := c.perEpoch(len(part))
		var epoch []int
		for step := 0; step < p.Steps; step++ {
			if step < p.ClientSteps[i] && step%perEpoch == 0 {
				epoch = append(epoch[:0], part...)
				if c.Shuffle {
					order.Shuffle(len(epoch), func(a, b int) { epoch[a], epoch[b] = epoch[b], epoch[a] })
				}
			}
			for b := 0; b < p.B; b++ {
				at := (step*p.K+i)*p.B + b
				p.Index[at] = int64(part[0])
				if step < p.ClientSteps[i] {
					if pos := step%perEpoch*p.B + b; pos < len(epoch) {
						p.Index[at], p.Mask[at] = int64(epoch[pos]), 1
					}
				}
				if c.Augment.Pad > 0 {
					p.DY[at], p.DX[at] = int64(aug.IntN(2*c.Augment.Pad+1)), int64(aug.IntN(2*c.Augment.Pad+1))
				}
				if c.Augment.Flip {
					p.Flip[at] = aug.IntN(2) == 1
				}
			}
		}
	}
	return p, nil
}

// perEpoch is how many steps one epoch of m samples takes: ceil(m/B), or with DropLast
// the batches of its whole groups.
func (c PlanConfig) perEpoch(m int) int {
	if c.DropLast > 0 {
		return m / (c.DropLast * c.Batch) * c.DropLast
	}
	return (m + c.Batch - 1) / c.Batch
}

// DevicePlan is a Plan on the device: uploaded for one round (Upload), or a static plan
// (NewStaticPlan) that keeps its tensors for a whole run and takes each round's Plan by
// Load.
type DevicePlan struct {
	*Plan
	index, mask *cuda.Tensor // [Steps, K, B] (a static plan: [capacity, K, B])
	dy, dx      *cuda.Tensor
	flip        *cuda.Tensor // bool
	noise       []*cuda.Generator
	noiseStd    *cuda.Tensor // [K, 1, 1, 1, 1], nil without noise
	cursor      *cuda.Tensor // int64 [1], a static plan's current step; nil otherwise
	capacity    int
}

// Upload copies the plan to dev. noiseStd (per stack row, may be nil) adds Gaussian noise
// of that standard deviation after normalization, drawn from each client's own
// (seed, "noise", round, client) stream.
func (p *Plan) Upload(dev cuda.Device, noiseStd []float64) (*DevicePlan, error) {
	s := cuda.NewScope()
	defer s.Close()
	dims := []int64{int64(p.Steps), int64(p.K), int64(p.B)}
	d := &DevicePlan{Plan: p}
	d.index = cuda.FromSlice(s, dev, p.Index, dims...)
	d.mask = cuda.FromSlice(s, dev, p.Mask, dims...)
	d.dy = cuda.FromSlice(s, dev, p.DY, dims...)
	d.dx = cuda.FromSlice(s, dev, p.DX, dims...)
	d.flip = cuda.FromSlice(s, dev, p.Flip, dims...)
	if noiseStd != nil {
		if len(noiseStd) != p.K {
			return nil, fmt.Errorf("data: plan: %d noise levels for %d clients", len(noiseStd), p.K)
		}
		d.noiseStd = s.To(cuda.FromSlice(s, dev, noiseStd, int64(p.K), 1, 1, 1, 1), cuda.Float32)
		seeds := make([]uint64, len(p.Clients))
		for i, id := range p.Clients {
			seeds[i] = noiseSeed(p.Config, id)
		}
		var err error
		if d.noise, err = noiseStreams(dev, seeds); err != nil {
			d.Close()
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		d.Close()
		return nil, err
	}
	s.Keep(d.index, d.mask, d.dy, d.dx, d.flip)
	if d.noiseStd != nil {
		s.Keep(d.noiseStd)
	}
	return d, nil
}

// NewStaticPlan allocates a plan of up to capacity steps for k clients and batch b on dev,
// whose tensors keep their addresses until Close. Load copies each round's Plan in;
// batches then read the step at a cursor on the device, which Advance moves. A training
// step built on it reads nothing from the host, so it can be captured once as a CUDA graph
// and replayed for every step of every round. noise: the partition adds feature noise
// (Upload's noiseStd).
func NewStaticPlan(dev cuda.Device, capacity, k, b int, noise bool) (*DevicePlan, error) {
	if capacity < 1 || k < 1 || b < 1 {
		return nil, fmt.Errorf("data: static plan: capacity %d, %d clients and batch %d must be positive", capacity, k, b)
	}
	s := cuda.NewScope()
	defer s.Close()
	dims := []int64{int64(capacity), int64(k), int64(b)}
	d := &DevicePlan{Plan: &Plan{K: k, B: b}, capacity: capacity}
	d.index = s.Zeros(cuda.Int64, dev, dims...)
	d.mask = s.Zeros(cuda.Float32, dev, dims...)
	d.dy = s.Zeros(cuda.Int64, dev, dims...)
	d.dx = s.Zeros(cuda.Int64, dev, dims...)
	d.flip = s.To(s.Zeros(cuda.Int64, dev, dims...), cuda.Bool)
	d.cursor = s.Zeros(cuda.Int64, dev, 1)
	keep := []*cuda.Tensor{d.index, d.mask, d.dy, d.dx, d.flip, d.cursor}
	if noise {
		d.noiseStd = s.Zeros(cuda.Float32, dev, int64(k), 1, 1, 1, 1)
		keep = append(keep, d.noiseStd)
		var err error
		if d.noise, err = noiseStreams(dev, make([]uint64, k)); err != nil { // reseeded by Load
			d.Close()
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		d.Close()
		return nil, err
	}
	s.Keep(keep...)
	return d, nil
}

// Generators are the plan's own random streams (the clients' feature noise; none without
// noise), which a CUDA graph that reads the plan's batches must register.
func (d *DevicePlan) Generators() []*cuda.Generator { return d.noise }

// Capacity is the most steps a static plan holds (0 for an uploaded plan).
func (d *DevicePlan) Capacity() int { return d.capacity }

// Load copies p into the static plan d and puts the cursor at step 0: its K and B must be
// d's, its steps at most d's capacity, and noiseStd (nil without noise) gives one standard
// deviation per client; the noise streams are reseeded for p's round and clients.
func (d *DevicePlan) Load(p *Plan, noiseStd []float64) error {
	switch {
	case d.cursor == nil:
		return fmt.Errorf("data: plan: Load needs a static plan")
	case p.K != d.K || p.B != d.B:
		return fmt.Errorf("data: plan: a plan of %d clients × batch %d does not fit a static plan of %d × %d", p.K, p.B, d.K, d.B)
	case p.Steps > d.capacity:
		return fmt.Errorf("data: plan: %d steps exceed the static plan's capacity %d", p.Steps, d.capacity)
	case (noiseStd != nil) != (d.noiseStd != nil) || (noiseStd != nil && len(noiseStd) != p.K):
		return fmt.Errorf("data: plan: %d noise levels for a static plan of %d clients (noise: %v)", len(noiseStd), p.K, d.noiseStd != nil)
	}
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	dev := d.index.Device()
	dims := []int64{int64(p.Steps), int64(p.K), int64(p.B)}
	for _, c := range []struct {
		dst *cuda.Tensor
		src *cuda.Tensor
	}{
		{d.index, cuda.FromSlice(s, dev, p.Index, dims...)},
		{d.mask, cuda.FromSlice(s, dev, p.Mask, dims...)},
		{d.dy, cuda.FromSlice(s, dev, p.DY, dims...)},
		{d.dx, cuda.FromSlice(s, dev, p.DX, dims...)},
		{d.flip, cuda.FromSlice(s, dev, p.Flip, dims...)},
	} {
		s.CopyFrom(s.Narrow(c.dst, 0, 0, int64(p.Steps)), c.src)
	}
	if noiseStd != nil {
		s.CopyFrom(d.noiseStd, cuda.FromSlice(s, dev, noiseStd, int64(p.K), 1, 1, 1, 1))
		for i, id := range p.Clients {
			if err := d.noise[i].Reseed(noiseSeed(p.Config, id)); err != nil {
				return err
			}
		}
	}
	d.reset(s)
	if err := s.Err(); err != nil {
		return err
	}
	d.Plan = p
	return nil
}

// reset puts the cursor back to step 0.
func (d *DevicePlan) reset(s *cuda.Scope) {
	s.CopyFrom(d.cursor, s.Zeros(cuda.Int64, d.cursor.Device(), 1))
}

// Advance moves a static plan's cursor to the next step: a device op, so a captured step
// advances it at every replay. Uploaded plans have no cursor (a no-op).
func (d *DevicePlan) Advance(s *cuda.Scope) {
	if d.cursor != nil {
		grad := s.GradEnabled()
		s.SetGradEnabled(false)
		s.CopyFrom(d.cursor, s.AddScalar(d.cursor, 1)) // (an integer tensor takes no in-place float add)
		s.SetGradEnabled(grad)
	}
}

// Row is t's row [K, ...] for step: row step of an uploaded plan's t [Steps, K, ...], or
// the row at a static plan's cursor (step then only checks the range).
func (d *DevicePlan) Row(s *cuda.Scope, t *cuda.Tensor, step int) *cuda.Tensor {
	if d.cursor == nil {
		return s.Select(t, 0, int64(step))
	}
	return s.Squeeze(s.IndexSelect(t, 0, d.cursor), 0)
}

// noiseSeed seeds client id's feature-noise stream for the round of c.
func noiseSeed(c PlanConfig, id int) uint64 {
	return rng.Derive(rng.Key{Seed: c.Seed, Purpose: "noise", Round: c.Round, Client: id})
}

// Close frees the plan's tensors and generators.
func (d *DevicePlan) Close() error {
	for _, t := range []*cuda.Tensor{d.index, d.mask, d.dy, d.dx, d.flip, d.noiseStd, d.cursor} {
		t.Close()
	}
	for _, g := range d.noise {
		g.Close()
	}
	return nil
}

// Batch is one step's client-stacked batch.
type Batch struct {
	X    *cuda.Tensor // [K, B, C, H, W] float32, augmented and normalized
	Y    *cuda.Tensor // [K, B] int64
	Mask *cuda.Tensor // [K, B] float32: 1 for a real sample, 0 for padding or an idle client
}

// Batch assembles step's batch in s: gather the uint8 images, scale to [0, 1], pad and
// crop and flip at the stored size, resize, repeat the grey channel, normalize, add noise
// (UploadConfig explains the order).
func (d *DeviceImages) Batch(s *cuda.Scope, p *DevicePlan, step int) Batch {
	if step < 0 || step >= p.Steps {
		s.Fail(fmt.Errorf("data: batch: step index %d outside the plan's steps 0 to %d", step, p.Steps-1))
		return Batch{}
	}
	k, b := int64(p.K), int64(p.B)
	c, h, w := int64(d.C), int64(d.H), int64(d.W)
	idx := s.Reshape(p.Row(s, p.index, step), -1)
	x := s.DivScalar(s.To(s.IndexSelect(d.X, 0, idx), cuda.Float32), 255) // [KB, C0, H0, W0]
	if aug := p.Config.Augment; aug.Pad > 0 || aug.Flip {
		pad := int64(aug.Pad)
		x = cropFlip(s, x, p, step, pad)
	}
	x = d.resize(s, x) // [KB, C0, H, W]
	if x.Size(1) != c {
		x = s.Expand(x, -1, c, h, w) // grey → RGB
	}
	dev := d.X.Device()
	x = s.Reshape(s.Div(s.Sub(x, d.mean), d.std), k, b, c, h, w)
	if p.noiseStd != nil {
		draws := make([]*cuda.Tensor, k)
		for i, g := range p.noise {
			draws[i] = s.Randn(g, cuda.Float32, dev, b, c, h, w)
		}
		x = s.Add(x, s.Mul(s.Stack(0, draws...), p.noiseStd))
	}
	y := s.Reshape(s.IndexSelect(d.Y, 0, idx), k, b)
	return Batch{X: x, Y: y, Mask: p.Row(s, p.mask, step)}
}

// cropFlip zero-pads x [N, C, H, W] by pad, then takes each sample's H×W window at its
// (dy, dx), reversed left-right where it flips: two gathers with per-sample index grids.
// It works at x's own (stored) size, before any resize.
func cropFlip(s *cuda.Scope, x *cuda.Tensor, p *DevicePlan, step int, pad int64) *cuda.Tensor {
	n, c, h, w := x.Size(0), x.Size(1), x.Size(2), x.Size(3)
	dev := x.Device()
	if pad > 0 {
		zr := s.Zeros(cuda.Float32, dev, n, c, pad, w)
		x = s.Cat(2, zr, x, zr)
		zc := s.Zeros(cuda.Float32, dev, n, c, h+2*pad, pad)
		x = s.Cat(3, zc, x, zc)
	}
	dy := s.Reshape(p.Row(s, p.dy, step), n, 1)
	dx := s.Reshape(p.Row(s, p.dx, step), n, 1)
	flip := s.Reshape(p.Row(s, p.flip, step), n, 1)
	rows := s.Add(dy, s.Arange(0, float64(h), 1, cuda.Int64, dev))             // [N, H]
	fwd := s.Arange(0, float64(w), 1, cuda.Int64, dev)                         // [W]
	rev := s.Arange(float64(w-1), -1, -1, cuda.Int64, dev)                     // [W]
	cols := s.Add(dx, s.Where(flip, s.Unsqueeze(rev, 0), s.Unsqueeze(fwd, 0))) // [N, W]
	x = s.Gather(x, 2, s.Expand(s.Reshape(rows, n, 1, h, 1), n, c, h, w+2*pad))
	return s.Gather(x, 3, s.Expand(s.Reshape(cols, n, 1, 1, w), n, c, h, w))
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// noiseStreams makes one feature-noise generator per client row, seeded with seeds; on an
// error it closes the ones it made.
func noiseStreams(dev cuda.Device, seeds []uint64) ([]*cuda.Generator, error) {
	gens := make([]*cuda.Generator, 0, len(seeds))
	for _, seed := range seeds {
		g, err := cuda.NewGenerator(seed, dev)
		if err != nil {
			for _, g := range gens {
				g.Close()
			}
			return nil, err
		}
		gens = append(gens, g)
	}
	return gens, nil
}
