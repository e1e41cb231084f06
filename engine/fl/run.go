package fl

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// Builder makes a model for k clients, drawing its initial weights from gen.
type Builder func(k int, gen *cuda.Generator) (model.Model, error)

// Run is a federated training run in progress. It owns its models and the client store.
type Run struct {
	cfg         Config
	strat       Strategy
	fed         *data.Federated
	train, test data.Samples
	trainable   []int // clients that may be sampled (all but the novel ones)
	serverK     int   // a SampledServer's clients per server update (the configured PerRound)

	global   model.Model    // one row: the shared values, and every personal parameter's initial value
	store    []*cuda.Tensor // per parameter index: [N, ...] rows of all clients when personal, else nil
	personal []bool
	hooks    hooks // the strategy's lifecycle hooks (strategy.go)
	genIdx   []int // indices of the generated parameters, in model order
	isGen    []bool
	stacked  model.Model // K = PerRound
	evalM    model.Model // K = EvalChunk
	single   model.Model // K = 1, for Sequential (and the novel clients' hypernetwork tuning)
	groups   groups      // the client groups and their threads' models (workers.go); none: one stack
	build    Builder     // the strategy's (wrapped) builder

	steps          map[stepKey]*stepState // per model and phase, for the whole run
	stepsMu        sync.Mutex             // guards steps: workers make theirs at once
	stream         *cuda.Stream           // the rounds' stream when steps are captured as CUDA graphs
	onRunStream    bool                   // inside Round, with stream current
	graphsCaptured int
	graphErr       error
	poolGraph      *cuda.Graph // the run's first captured step, whose memory pool the later captures share

	// History is every finished round's metrics.
	History []RoundMetrics
}

// RoundMetrics is what one round measured.
type RoundMetrics struct {
	Round     int
	Clients   []int   // sampled
	TrainLoss float64 // mean of the clients' per-step mean losses
	Samples   int     // training samples processed
	Eval      *EvalResult
	Time      Timing
}

// Timing splits a round's wall time.
type Timing struct {
	Data, Train, Aggregate, Eval time.Duration
}

// New prepares a run: the initial global model, the store of personal parameters (every
// client starts from the same initial values) and the stacked models.
func New(cfg Config, strat Strategy, fed *data.Federated, train, test data.Samples, build Builder) (*Run, error) {
	return NewContext(context.Background(), cfg, strat, fed, train, test, build)
}

// NewContext is New that stops, freeing what it built, when ctx ends: it checks ctx before
// each model it builds (a deep model's global, stacked, evaluation and group copies take
// seconds each) and before the strategy binds its own state (a hypernetwork). The error
// is then ctx's.
func NewContext(ctx context.Context, cfg Config, strat Strategy, fed *data.Federated, train, test data.Samples, build Builder) (*Run, error) {
	cfg.defaults()
	n := len(fed.Part.Train)
	r := &Run{cfg: cfg, strat: strat, hooks: hooksOf(strat), fed: fed, train: train, test: test}
	for c := 0; c < n; c++ {
		if !slices.Contains(fed.Part.Novel, c) {
			r.trainable = append(r.trainable, c)
		}
	}
	if err := cfg.Validate(len(r.trainable)); err != nil {
		return nil, err
	}
	if r.hooks.every {
		r.serverK = cfg.PerRound
		cfg.PerRound = len(r.trainable)
		r.cfg = cfg
	}
	if err := r.checkShardable(); err != nil {
		return nil, err
	}
	g, err := cuda.NewGenerator(rng.Derive(rng.Key{Seed: cfg.Seed, Purpose: "init", Round: -1, Client: -1}), cfg.Device)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	if c, ok := strat.(classCounter); ok && fed.Train != nil {
		c.setClasses(fed.Train.Classes)
	}
	if w := r.hooks.wrap; w != nil {
		inner := build
		build = func(k int, g *cuda.Generator) (model.Model, error) {
			m, err := inner(k, g)
			if err != nil {
				return nil, err
			}
			wrapped, err := w.Wrap(m, inner, g)
			if err != nil {
				m.Close()
				return nil, fmt.Errorf("fl: %s: %w", strat.Name(), err)
			}
			return wrapped, nil
		}
	}
	r.build = build
	models := []*model.Model{&r.global, &r.stacked, &r.evalM}
	// the stacked model holds this rank's share of the round's clients (all of them in
	// one process); the shares' sizes do not change from round to round
	lo, hi := 0, cfg.PerRound
	if r.distributed() {
		lo, hi = share(cfg.PerRound, cfg.Group.Rank(), cfg.Group.World())
	}
	ks := []int{1, hi - lo, cfg.EvalChunk}
	if cfg.Sequential {
		models, ks = append(models, &r.single), append(ks, 1)
	}
	for i, k := range ks {
		if err := ctx.Err(); err != nil {
			r.Close()
			return nil, err
		}
		// A builder's error comes with a nil pointer inside the interface; only a built
		// model is stored, so Close never calls a method on it.
		m, err := build(k, g)
		if err != nil {
			r.Close()
			return nil, err
		}
		*models[i] = m
	}
	if !cfg.Sequential {
		if err := r.buildGroups(ctx, hi-lo, g); err != nil {
			r.Close()
			return nil, err
		}
	}
	if mz := r.hooks.memory; mz != nil {
		if err := checkKNN(mz.Memory(), r.global); err != nil {
			r.Close()
			return nil, fmt.Errorf("fl: %s: %w", strat.Name(), err)
		}
	}
	if b := r.hooks.bind; b != nil {
		if err := ctx.Err(); err != nil {
			r.Close()
			return nil, err
		}
		if err := b.Bind(Env{Fed: fed, Model: r.global, Device: cfg.Device, DType: cfg.DType, Seed: cfg.Seed, Batch: cfg.Batch}); err != nil {
			r.Close()
			return nil, fmt.Errorf("fl: %s: %w", strat.Name(), err)
		}
	}
	if cfg.Graphs && cfg.Device.IsCUDA() {
		if r.stream, err = cuda.NewStream(cfg.Device); err != nil {
			r.Close()
			return nil, err
		}
	}
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for i, p := range r.global.Params().List {
		personal := strat.Personal(p)
		generated := r.hooks.gen != nil && r.hooks.gen.Generated(p)
		if personal && generated {
			r.Close()
			return nil, fmt.Errorf("fl: %s: %s is both personal and generated", strat.Name(), p.Name)
		}
		if generated {
			r.genIdx = append(r.genIdx, i)
		}
		r.isGen = append(r.isGen, generated)
		r.personal = append(r.personal, personal)
		var rows *cuda.Tensor
		if personal {
			rows = s.Contiguous(s.Expand(p.T, append([]int64{int64(n)}, p.Shape...)...))
			s.Keep(rows)
		}
		r.store = append(r.store, rows)
	}
	if err := s.Err(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close frees the models and the store.
func (r *Run) Close() error {
	r.closeGroups()
	for _, m := range []model.Model{r.global, r.stacked, r.evalM, r.single} {
		if m != nil {
			m.Close()
		}
	}
	for _, t := range r.store {
		t.Close()
	}
	for _, ss := range r.steps {
		ss.close()
	}
	r.steps = nil
	r.stream.Close()
	if c, ok := r.strat.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// sample draws the round's clients from the round's own stream, sorted.
func (r *Run) sample(round int) []int { return r.sampleN(round, r.cfg.PerRound) }

// serverClients are the clients whose trained values the round's server update reads: the
// round's trained clients, or a SampledServer's sample of them (the clients the same seed
// samples for an algorithm that trains only those).
func (r *Run) serverClients(round int, trained []int) []int {
	if !r.hooks.sampled {
		return trained
	}
	return r.sampleN(round, r.serverK)
}

// sampleN draws n clients from the round's sampling stream, sorted.
func (r *Run) sampleN(round, n int) []int {
	g := rng.New(rng.Key{Seed: r.cfg.Seed, Purpose: "sample", Round: round, Client: -1})
	perm := g.Perm(len(r.trainable))[:n]
	ids := make([]int, len(perm))
	for i, j := range perm {
		ids[i] = r.trainable[j]
	}
	slices.Sort(ids)
	return ids
}

func ids64(ids []int) []int64 {
	out := make([]int64, len(ids))
	for i, c := range ids {
		out[i] = int64(c)
	}
	return out
}

// load writes the clients' personal rows and the global shared values into m's rows.
// Generated parameters are left alone: loadGenerated fills them.
func (r *Run) load(s *cuda.Scope, m model.Model, ids []int) {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	idx := cuda.FromSlice(s, r.cfg.Device, ids64(ids))
	global := r.global.Params().List
	for i, p := range m.Params().List {
		if r.isGen[i] {
			continue
		}
		if r.personal[i] {
			s.CopyFrom(p.T, s.IndexSelect(r.store[i], 0, idx))
		} else {
			s.CopyFrom(p.T, global[i].T)
		}
	}
}

// loadGenerated writes generated parameters (in genIdx order, [K, ...]) into m's rows.
func (r *Run) loadGenerated(s *cuda.Scope, m model.Model, generated []*cuda.Tensor) {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	for j, i := range r.genIdx {
		s.CopyFrom(m.Params().List[i].T, s.Detach(generated[j]))
	}
}

// Round runs round number round (0-based): sample, train, aggregate, and evaluate when due,
// with its goroutine locked to its OS thread (see lockThread).
func (r *Run) Round(round int) (RoundMetrics, error) {
	defer lockThread()()
	met := RoundMetrics{Round: round, Clients: r.sample(round)}
	if r.stream != nil {
		done, err := r.onStream()
		if err != nil {
			return met, err
		}
		defer done()
	}
	s := cuda.NewScope()
	defer s.Close()
	t0 := time.Now()
	local, _ := r.localShare(met.Clients) // this rank's clients: all of them in one process
	var generated []*cuda.Tensor          // with the graph back to the server's parameters
	if r.hooks.gen != nil {
		generated = r.hooks.gen.Generate(s, cuda.FromSlice(s, r.cfg.Device, ids64(local)))
		if len(generated) != len(r.genIdx) {
			return met, fmt.Errorf("fl: %s generated %d parameters, want %d", r.strat.Name(), len(generated), len(r.genIdx))
		}
	}
	var sum, count float64
	switch {
	case r.cfg.Sequential:
		for i, c := range met.Clients {
			rows := make([]*cuda.Tensor, len(generated))
			for j, g := range generated {
				rows[j] = s.Narrow(g, 0, int64(i), 1)
			}
			l, n, err := r.localTrain(s, r.single, []int{c}, rows, round, &met)
			if err != nil {
				return met, err
			}
			sum, count = sum+sumLosses(l), count+n
			s.SetGradEnabled(false)
			row := cuda.FromSlice(s, r.cfg.Device, []int64{int64(i)})
			for j, p := range r.stacked.Params().List {
				s.IndexCopy(p.T, 0, row, r.single.Params().List[j].T)
			}
			s.SetGradEnabled(true)
		}
	case len(r.groups.train) > 1:
		l, n, err := r.trainGroups(s, local, generated, round, &met)
		if err != nil {
			return met, err
		}
		sum, count = sumLosses(l), n
	default:
		l, n, err := r.localTrain(s, r.stacked, local, generated, round, &met)
		if err != nil {
			return met, err
		}
		sum, count = sumLosses(l), n
	}
	samples := float64(met.Samples) // exact in float64 below 2^53
	if err := r.allReduceFloats(&sum, &count, &samples); err != nil {
		return met, err
	}
	met.Samples = int(samples)
	met.TrainLoss = sum / math.Max(count, 1) // finite: trainPhase stops on a client's non-finite loss
	if err := cuda.Synchronize(r.cfg.Device); err != nil {
		return met, err
	}
	met.Time.Train = time.Since(t0) - met.Time.Data
	r.phaseDone()

	last := round == r.cfg.Rounds-1
	due := last || (r.cfg.EvalEvery > 0 && (round+1)%r.cfg.EvalEvery == 0)
	if due && r.cfg.Protocol == EvalFedPerfix {
		t2 := time.Now()
		ev, err := r.evaluateBeforeAggregation(local, met.Clients)
		if err != nil {
			return met, err
		}
		met.Eval = &ev
		met.Time.Eval = time.Since(t2)
		r.phaseDone()
	}

	t1 := time.Now()
	if err := r.aggregate(s, met.Clients, r.serverClients(round, met.Clients), generated); err != nil {
		return met, err
	}
	met.Time.Aggregate = time.Since(t1)
	r.phaseDone()

	if due && r.cfg.Protocol != EvalFedPerfix {
		t2 := time.Now()
		ev, err := r.Evaluate()
		if err != nil {
			return met, err
		}
		met.Eval = &ev
		met.Time.Eval = time.Since(t2)
		r.phaseDone()
	}
	r.History = append(r.History, met)
	return met, nil
}

// phaseDone ends a phase of a round (training, aggregation, evaluation) on the CPU: the
// caching allocator's idle blocks, sized for this phase's shapes, and the small blocks
// glibc's heaps hold free go back to the system, so they never sit beside the next phase's
// and the process's peak is its largest phase's — when either holds keepIdle bytes or
// more. A smaller idle set costs little memory beside the next phase, and keeping it
// spares the next round faulting those pages in again (measured on the small side-by-side
// config: 8% of CPU time in the kernel when every phase released, 2–5% before). A deep,
// narrow model's activations are small blocks: a 200-block ViT of width 8 left 1.2 GB
// free in the worker threads' heaps after each training phase, resident until trimmed.
func (r *Run) phaseDone() {
	if r.cfg.Device.IsCUDA() {
		return
	}
	if st, ok := cuda.HostCache(); ok && st.IdleBytes < keepIdle && st.HeapFreeBytes < keepIdle {
		return
	}
	cuda.ReleaseHostCache()
}

// keepIdle is the idle cache phaseDone leaves in place.
const keepIdle = 256 << 20

// lockThread locks the calling goroutine to its OS thread until the returned function
// runs (calls nest). Round, Evaluate and FineTuneNovel, which build and differentiate
// autograd graphs, hold it on every device, not only for CUDA graphs: libtorch numbers
// autograd nodes from a per-thread counter (at::sequence_number) and a backward pass runs
// its ready nodes in the order of those numbers, so a goroutine that moves to another OS
// thread while building a graph numbers its nodes out of creation order, the backward pass
// then sums gradients in another order, and the same run rounds differently from one
// process to the next. Grad mode, autocast and the stream are installed per native call;
// this counter cannot be. (Per-FedAvg HF's double backward showed it: its float64 weights
// differed in the 7th digit between runs after two rounds.)
func lockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// onStream runs the rest of a round on the run's own stream, as graph capture needs (not
// the default stream): on the OS thread Round has locked its goroutine to (the current
// stream is thread-local), it waits for earlier work on the device and makes the stream
// current. done waits for the round's work and restores the default stream.
func (r *Run) onStream() (done func(), err error) {
	dev := r.cfg.Device
	if err := cuda.Synchronize(dev); err != nil {
		return nil, err
	}
	if err := cuda.SetCurrentStream(dev, r.stream); err != nil {
		return nil, err
	}
	r.onRunStream = true
	return func() {
		r.onRunStream = false
		r.stream.Synchronize()
		cuda.SetCurrentStream(dev, nil)
	}, nil
}

// aggregate averages the shared parameters over the round's clients ids (weights m_k/M, or
// the strategy's: Weighter; a client of ids outside server, the clients the server update
// reads, weighs 0) into the global model, writes the personal rows back to the store, and
// lets a generative strategy learn from the generated parameters' change.
//
// Across processes (dist.go) the stacked model holds this rank's share of ids; the
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
		trained := make([]*cuda.Tensor, len(r.genIdx))
		for j, i := range r.genIdx {
			trained[j] = r.stacked.Params().List[i].T
		}
		if sl, ok := r.hooks.gen.(ShardedLearner); ok && r.distributed() {
			sum := sl.LearnSum(s, generated, trained, w)
			if err := s.Err(); err != nil {
				return err
			}
			if err := r.allReduce(sum...); err != nil {
				return err
			}
			sl.LearnApply(s, sum)
		} else {
			r.hooks.gen.Learn(s, generated, trained, w)
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
	if ma, ok := r.hooks.aggregate.(MeanAggregator); ok && r.distributed() && len(dst) > 0 {
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
		if err := ma.AggregateMean(s, dst, means); err != nil {
			return fmt.Errorf("fl: %s: server update: %w", r.strat.Name(), err)
		}
		return s.Err()
	}
	if a := r.hooks.aggregate; a != nil {
		if err := a.Aggregate(s, dst, src, w); err != nil {
			return fmt.Errorf("fl: %s: server update: %w", r.strat.Name(), err)
		}
		return s.Err()
	}
	if err := AverageInto(s, dst, src, w); err != nil {
		return err
	}
	return r.allReduce(dst...)
}

// localTrain runs the clients' local training on m (loading their rows first), phase by
// phase, and returns per phase each client's sum of its per-step mean losses, and how many
// (client, step) pairs they hold.
func (r *Run) localTrain(s *cuda.Scope, m model.Model, ids []int, generated []*cuda.Tensor, round int, met *RoundMetrics) ([][]float64, float64, error) {
	r.load(s, m, ids)
	r.loadGenerated(s, m, generated)
	if st := r.hooks.start; st != nil {
		grad := s.GradEnabled()
		s.SetGradEnabled(false)
		st.Start(s, m)
		s.SetGradEnabled(grad)
		if err := s.Err(); err != nil {
			return nil, 0, fmt.Errorf("fl: %s: start: %w", r.strat.Name(), err)
		}
	}
	phases := r.hooks.phases(r.cfg.Epochs)
	losses := make([][]float64, len(phases))
	var pairs float64
	for i, ph := range phases {
		l, n, err := r.trainPhase(s, m, ids, r.fed.Part.Train, round, i, ph, met)
		if err != nil {
			return nil, 0, err
		}
		losses[i], pairs = l, pairs+n
	}
	return losses, pairs, nil
}

// sumLosses adds up localTrain's losses phase by phase, each phase's clients in order.
func sumLosses(losses [][]float64) float64 {
	var sum float64
	for _, phase := range losses {
		var l float64
		for _, v := range phase {
			l += v
		}
		sum += l
	}
	return sum
}

// trainPhase trains the parameters ph selects on the clients' samples parts[id].
func (r *Run) trainPhase(s *cuda.Scope, m model.Model, ids []int, parts [][]int, round, phase int, ph Phase, met *RoundMetrics) ([]float64, float64, error) {
	var train, global []*cuda.Tensor
	globalList := r.global.Params().List
	for i, p := range m.Params().List {
		if !p.Buffer && ph.Train(p) {
			train = append(train, p.T)
			global = append(global, globalList[i].T)
		}
	}
	reg := r.hooks.penalty
	per := r.hooks.perStep(phase)
	ss, err := r.phaseState(m, phase, ph.Epochs, ph.Steps, per, parts, r.hooks.newOptimizer(phase, SGDConfig{LR: r.cfg.LR, Momentum: r.cfg.Momentum, WeightDecay: r.cfg.WeightDecay}))
	if err != nil {
		return nil, 0, err
	}
	opt := ss.opt // the phase's, kept with its buffers for the whole run
	if stepper := r.hooks.stepper; stepper != nil && phase != FineTunePhase {
		return r.runSteps(s, ss, ids, parts, round, phase, ph.Epochs, ph.Steps, per, met, func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor {
			return stepper.Step(st, StepInput{Model: m, Batches: bs, Passes: passes, Params: train, Global: global,
				Opt: opt, Active: active, Loss: r.loss})
		})
	}
	return r.runSteps(s, ss, ids, parts, round, phase, ph.Epochs, ph.Steps, 1, met, func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor {
		b, pass := bs[0], passes[0]
		perClient := r.loss(st, m, b, pass)
		loss := st.Sum(perClient, false)
		if reg != nil {
			loss = st.Add(loss, reg.Penalty(st, train, global))
		}
		grads := st.Grad([]*cuda.Tensor{loss}, nil, train, cuda.GradOptions{AllowUnused: true})
		if st.Err() != nil { // e.g. a batch the model cannot take: runSteps says so; do not step
			return perClient
		}
		for i, g := range grads {
			if g == nil { // a parameter the loss does not reach this pass
				grads[i] = st.Zeros(train[i].DType(), train[i].Device(), train[i].Shape()...)
			}
		}
		opt.Step(st, train, grads, active)
		return perClient
	})
}

// loss is each client's local loss [K]: the strategy's Objective, else the mean
// cross-entropy over the client's real samples.
func (r *Run) loss(s *cuda.Scope, m model.Model, b Batch, pass *model.Pass) *cuda.Tensor {
	if obj := r.hooks.objective; obj != nil {
		return obj.Loss(s, m, b, pass)
	}
	return maskedMean(s, m.Forward(s, b.X, pass), b.Y, b.Mask)
}

// stepFunc runs one training step on its consecutive batches bs (one, unless a Stepper
// takes more), each with its pass: it returns the clients' losses [K] and updates whatever
// it trains. active [K] marks the clients whose epochs are not done.
type stepFunc func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor

// autocast turns on the configured autocast for s's later ops (a step's forward and
// backward; the optimizer's elementwise updates stay in the weights' dtype, as autocast
// leaves elementwise ops alone).
func (r *Run) autocast(s *cuda.Scope) {
	if r.cfg.Autocast != 0 {
		s.SetAutocast(r.cfg.Autocast)
	}
}

// input converts a batch's inputs to the models' dtype; token ids stay integers.
func (r *Run) input(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
	if x.DType().IsFloat() {
		return s.To(x, r.cfg.DType)
	}
	return x
}

func sumMask(p *data.Plan, step, client int) float32 {
	var n float32
	at := (step*p.K + client) * p.B
	for _, m := range p.Mask[at : at+p.B] {
		n += m
	}
	return n
}

// maskedMean is each client's mean loss over its real samples: logits [K, B, C] with
// labels [K, B], or [K, B, T, C] with a label per position [K, B, T] (text: a sample's
// loss is the mean over its positions); mask [K, B] -> [K]; an idle client (no real
// sample) gives 0.
func maskedMean(s *cuda.Scope, logits, y, mask *cuda.Tensor) *cuda.Tensor {
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

// Strategy is the run's algorithm.
func (r *Run) Strategy() Strategy { return r.strat }

// Novel lists the clients held out of training.
func (r *Run) Novel() []int { return r.fed.Part.Novel }

// Clients is the number of clients in the federation (novel ones included).
func (r *Run) Clients() int { return len(r.fed.Part.Train) }
