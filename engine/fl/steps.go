package fl

import (
	"fmt"
	"math"
	"time"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// stepState is everything a phase's training steps read or write besides the model's
// parameters: the plan at a fixed capacity with its step cursor on the device, each stack
// row's dropout stream, the per-step activity, the clients' rows, the loss accumulator
// and the optimizer's buffers. A run keeps one per (model, phase) for its whole life, so
// these stay at fixed addresses: the step captured as a CUDA graph in the first round is
// replayed for every step of every later round, with each round's values copied into the
// same memory first (docs/design.md, "The fast path is the same path"). On the CPU, or with
// graphs off, the same step runs eagerly.
type stepState struct {
	plan     *data.DevicePlan  // static, read at its cursor
	active   *cuda.Tensor      // [capacity, K] float32: 1 while a client's epochs last
	rows     *cuda.Tensor      // [K] int64: the clients of the stack rows
	gens     []*cuda.Generator // row k's dropout stream, reseeded per round and client
	lossSum  *cuda.Tensor      // [K] float32: the clients' summed step losses, read per phase
	opt      Optimizer         // the phase's optimizer (nil when the step brings its own)
	graph    *cuda.Graph       // the captured step, once captured
	warm     bool              // a step ran eagerly: the next one may be captured
	captured bool              // capture was tried (once per state)
}

func newStepState(dev cuda.Device, capacity, k, b int, noise bool) (*stepState, error) {
	plan, err := data.NewStaticPlan(dev, capacity, k, b, noise)
	if err != nil {
		return nil, err
	}
	ss := &stepState{plan: plan}
	for range k {
		g, err := cuda.NewGenerator(0, dev)
		if err != nil {
			ss.close()
			return nil, err
		}
		ss.gens = append(ss.gens, g)
	}
	s := cuda.NewScope()
	defer s.Close()
	ss.active = s.Zeros(cuda.Float32, dev, int64(capacity), int64(k))
	ss.rows = s.Zeros(cuda.Int64, dev, int64(k))
	ss.lossSum = s.Zeros(cuda.Float32, dev, int64(k))
	if err := s.Err(); err != nil {
		ss.close()
		return nil, err
	}
	s.Keep(ss.active, ss.rows, ss.lossSum)
	return ss, nil
}

// capacity is the most steps the state's plan holds.
func (ss *stepState) capacity() int { return ss.plan.Capacity() }

// close frees the state, its graph and its optimizer's buffers.
func (ss *stepState) close() {
	ss.graph.Close()
	ss.plan.Close()
	for _, g := range ss.gens {
		g.Close()
	}
	for _, t := range []*cuda.Tensor{ss.active, ss.rows, ss.lossSum} {
		t.Close()
	}
	if ss.opt != nil {
		ss.opt.Close()
	}
}

// load copies a phase's plan, the clients' activity and rows into the state, reseeds the
// clients' dropout streams from (seed, "dropout/<phase>", round, client), and zeroes the
// loss accumulator and the optimizer's momentum: the phase starts as a fresh optimizer
// would.
func (ss *stepState) load(s *cuda.Scope, plan *data.Plan, noise []float64, active []float32, ids []int, seed uint64, round, phase int) error {
	if err := ss.plan.Load(plan, noise); err != nil {
		return err
	}
	for i, c := range ids {
		if err := ss.gens[i].Reseed(rng.Derive(rng.Key{Seed: seed, Purpose: fmt.Sprint("dropout/", phase), Round: round, Client: c})); err != nil {
			return err
		}
	}
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	dev := ss.rows.Device()
	k := int64(len(ids))
	s.CopyFrom(s.Narrow(ss.active, 0, 0, int64(len(active))/k), cuda.FromSlice(s, dev, active, int64(len(active))/k, k))
	s.CopyFrom(ss.rows, cuda.FromSlice(s, dev, ids64(ids)))
	s.ForeachZero([]*cuda.Tensor{ss.lossSum})
	if ss.opt != nil {
		ss.opt.Reset(s)
	}
	return s.Err()
}

// generators are the streams a captured step draws from, which the graph must register.
func (ss *stepState) generators() []*cuda.Generator {
	return append(append([]*cuda.Generator(nil), ss.gens...), ss.plan.Generators()...)
}

// stepKey names a run's cached step state: one per model and phase of local training.
type stepKey struct {
	m     model.Model
	phase int
}

// phaseState returns the run's step state for training m in phase, made on first use with
// room for the longest plan of epochs epochs that any client's samples parts[c] can need,
// rounded up to whole steps of per batches, and at most maxSteps steps when maxSteps > 0
// (runSteps cuts a plan at the phase's step limit before loading it).
func (r *Run) phaseState(m model.Model, phase, epochs, maxSteps, per int, parts [][]int, newOpt func() Optimizer) (*stepState, error) {
	r.stepsMu.Lock()
	defer r.stepsMu.Unlock()
	key := stepKey{m, phase}
	if ss := r.steps[key]; ss != nil {
		return ss, nil
	}
	capacity := 1
	for _, part := range parts {
		capacity = max(capacity, epochs*((len(part)+r.cfg.Batch-1)/r.cfg.Batch))
	}
	capacity = (capacity + per - 1) / per * per
	if maxSteps > 0 {
		capacity = min(capacity, maxSteps*per)
	}
	k := m.Params().List[0].T.Size(0)
	ss, err := newStepState(r.cfg.Device, capacity, int(k), r.cfg.Batch, r.fed.Part.Noise != nil)
	if err != nil {
		return nil, err
	}
	ss.opt = newOpt()
	if r.steps == nil {
		r.steps = map[stepKey]*stepState{}
	}
	r.steps[key] = ss
	return ss, nil
}

// runSteps plans epochs epochs (at most maxSteps steps when > 0) of the clients' samples
// parts[id], loads the plan into a step state (ss, the run's for the phase, or when nil a
// state of its own for this call) and runs step on each step's stacked batches, assembled
// on the device: per consecutive batches of the plan a step (a Step hook's count; the plan is
// padded with idle batches to whole steps, and a client is active in a step while its
// first batch is real). It returns each client's sum of its per-step mean losses and how
// many (client, step) pairs they hold; a non-finite loss is an error naming the clients. The
// losses are read once, after the last step.
//
// With CUDA graphs on and the run's state, the first step ever runs eagerly (a warm-up that
// also allocates the optimizer's buffers), the second is captured, and every later step,
// in this and every later round, replays the capture. A step must therefore read only
// device values that change between steps and rounds (the batch, the activity, Batch.Rows,
// the dropout streams), never Go values such as Batch.Clients.
func (r *Run) runSteps(s *cuda.Scope, ss *stepState, ids []int, parts [][]int, round, phase, epochs, maxSteps, per int, met *RoundMetrics, step stepFunc) ([]float64, float64, error) {
	td := time.Now()
	plan, noise, steps, err := r.stepPlan(ids, parts, round, phase, epochs, maxSteps, per)
	if err != nil {
		return nil, 0, err
	}
	cached := ss != nil
	if !cached {
		if ss, err = newStepState(r.cfg.Device, plan.Steps, len(ids), r.cfg.Batch, noise != nil); err != nil {
			return nil, 0, err
		}
		defer ss.close()
	}
	active, pairs := activity(plan, steps, per, met)
	if err := ss.load(s, plan, noise, active, ids, r.cfg.Seed, round, phase); err != nil {
		return nil, 0, err
	}
	if met != nil {
		met.Time.Data += time.Since(td)
	}
	st := cuda.NewScope()
	defer st.Close()
	var i int // the step being run (only checked: the plan's cursor picks its rows)
	batches, passes := make([]Batch, per), make([]*model.Pass, per)
	body := func(st *cuda.Scope) {
		for j := range per {
			if j > 0 {
				ss.plan.Advance(st)
			}
			b := r.train.Batch(st, ss.plan, i*per+j)
			batches[j] = Batch{X: r.input(st, b.X), Y: b.Y, Mask: b.Mask, Clients: ids, Rows: ss.rows}
			passes[j] = &model.Pass{Train: true, Gens: ss.gens, Mask: b.Mask}
		}
		r.autocast(st)
		// the last batch's row of the activity: every row of a step holds the step's
		perClient := step(st, batches, passes, ss.plan.Row(st, ss.active, i*per+per-1))
		if r.cfg.Autocast != 0 {
			st.SetAutocast(cuda.Float32)
		}
		st.SetGradEnabled(false)
		st.CopyFrom(ss.lossSum, st.Add(ss.lossSum, st.To(st.Detach(perClient), cuda.Float32)))
		ss.plan.Advance(st)
		st.SetGradEnabled(true)
	}
	// where names the step 1-based, as the console numbers rounds; the novel clients'
	// fine-tuning runs after the last round, and its caller names the epoch
	where := func(i int) string {
		if phase >= novelPhase {
			return fmt.Sprintf("step %d of %d", i+1, steps)
		}
		return fmt.Sprintf("round %d step %d of %d", round+1, i+1, steps)
	}
	for i = 0; i < steps; i++ {
		if err := r.runStep(st, ss, cached, body); err != nil {
			return nil, 0, fmt.Errorf("fl: %s: %w", where(i), err)
		}
		if err := s.Err(); err != nil {
			return nil, 0, fmt.Errorf("fl: %s: %w", where(i), err)
		}
	}
	perClient, err := finiteLosses(ss, ids, round)
	return perClient, pairs, err
}

// stepPlan plans epochs epochs of the clients' samples parts[id] in steps of per batches:
// the plan padded with idle batches to whole steps and cut at maxSteps steps (when > 0),
// the clients' test-time noise, and the number of steps.
func (r *Run) stepPlan(ids []int, parts [][]int, round, phase, epochs, maxSteps, per int) (*data.Plan, []float64, int, error) {
	own := make([][]int, len(ids))
	var noise []float64
	for i, c := range ids {
		own[i] = parts[c]
		if r.fed.Part.Noise != nil {
			noise = append(noise, r.fed.Part.Noise[c])
		}
	}
	pc := data.PlanConfig{Epochs: epochs, Batch: r.cfg.Batch, Shuffle: true,
		Augment: r.cfg.Augment, Seed: r.cfg.Seed, Round: round, Phase: phase}
	if r.cfg.DropLast {
		pc.DropLast = per
	}
	plan, err := data.NewPlan(ids, own, pc)
	if err != nil {
		return nil, nil, 0, err
	}
	steps := (plan.Steps + per - 1) / per
	padPlan(plan, steps*per)
	if maxSteps > 0 && maxSteps < steps {
		steps = maxSteps
		cutPlan(plan, steps*per) // the steps past the limit are never run: do not load them
	}
	return plan, noise, steps, nil
}

// activity is the plan's per-step activity [steps·per, K] (a step reads its activity at
// its first batch's row; the other rows repeat it: a client is active in a step while its
// first batch is real) and how many (client, step) pairs are active; the active batches'
// samples are counted into met.
func activity(plan *data.Plan, steps, per int, met *RoundMetrics) ([]float32, float64) {
	k := plan.K
	active := make([]float32, steps*per*k)
	var pairs float64
	for st := 0; st < steps; st++ {
		for i := 0; i < k; i++ {
			if st*per < plan.ClientSteps[i] {
				for j := 0; j < per; j++ {
					active[(st*per+j)*k+i] = 1
					if met != nil {
						met.Samples += int(sumMask(plan, st*per+j, i))
					}
				}
				pairs++
			}
		}
	}
	return active, pairs
}

// finiteLosses reads the clients' summed step losses (one host sync per phase); a
// non-finite loss is a DivergedError naming the clients.
func finiteLosses(ss *stepState, ids []int, round int) ([]float64, error) {
	perClient, err := ss.lossSum.Float64s()
	if err != nil {
		return nil, err
	}
	var bad []int
	for i, v := range perClient {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, ids[i])
		}
	}
	if bad != nil {
		return nil, &DivergedError{Round: round + 1, Clients: bad}
	}
	return perClient, nil
}

// DivergedError is a round whose training loss is not finite (NaN or infinite) for some
// clients: the run diverged, and the round changed neither the global model nor the store.
type DivergedError struct {
	Round   int   // 1-based
	Clients []int // the clients whose loss is not finite
}

func (e *DivergedError) Error() string {
	return fmt.Sprintf("fl: round %d: the training loss of client(s) %v is not finite", e.Round, e.Clients)
}

// padPlan extends p with idle steps (mask 0, sample index 0) to steps steps.
func padPlan(p *data.Plan, steps int) {
	if steps <= p.Steps {
		return
	}
	extra := (steps - p.Steps) * p.K * p.B
	p.Index = append(p.Index, make([]int64, extra)...)
	p.Mask = append(p.Mask, make([]float32, extra)...)
	p.DY = append(p.DY, make([]int64, extra)...)
	p.DX = append(p.DX, make([]int64, extra)...)
	p.Flip = append(p.Flip, make([]bool, extra)...)
	p.Steps = steps
}

// cutPlan shortens p to its first steps steps.
func cutPlan(p *data.Plan, steps int) {
	if steps >= p.Steps {
		return
	}
	n := steps * p.K * p.B
	p.Index, p.Mask, p.DY, p.DX, p.Flip = p.Index[:n], p.Mask[:n], p.DY[:n], p.DX[:n], p.Flip[:n]
	for i, cs := range p.ClientSteps {
		p.ClientSteps[i] = min(cs, steps)
	}
	p.Steps = steps
}

// runStep runs one step: a replay of the state's graph when it has one; else, with graphs
// on (inside Round) and the state warm, a capture followed by a replay (capturing records
// the step without running it); else the step eagerly. A capture that fails stops the run
// with its error (the stream's memory pool may be unusable after it, so going on eagerly on
// it is no safe fallback), naming train.eager as the way to train without graphs. A
// HostStep strategy's steps always run eagerly.
func (r *Run) runStep(st *cuda.Scope, ss *stepState, cached bool, body func(*cuda.Scope)) error {
	// Graphs run on the run's stream, which is current only inside Round; outside it (an
	// evaluation's fine-tuning called on its own) the steps run eagerly, in stream order.
	if ss.graph != nil && r.onRunStream {
		return ss.graph.Replay()
	}
	if r.onRunStream && cached && ss.warm && !ss.captured && !r.hooks.train.HostStep {
		ss.captured = true
		if err := r.capture(st, ss, body); err != nil {
			r.graphErr = err
			return fmt.Errorf("%w; set train.eager: true (pfl bench -eager) to train without CUDA graphs", err)
		}
		r.graphsCaptured++
		return ss.graph.Replay()
	}
	st.Reset()
	body(st)
	ss.warm = true
	return st.Err()
}

// capture records body on the run's stream as ss's graph, registering the streams it
// draws from. Every capture of the run after the first draws its memory from the first
// one's pool: the phases' steps (FedRep's two, FedBABU's fine-tuning, the evaluation
// model's) replay one after another on one stream, and each step's intermediates die with
// it, so one activation footprint serves them all.
func (r *Run) capture(st *cuda.Scope, ss *stepState, body func(*cuda.Scope)) error {
	g, err := cuda.NewGraph()
	if err != nil {
		return err
	}
	for _, gen := range ss.generators() {
		if err := g.Register(gen); err != nil {
			g.Close()
			return err
		}
	}
	begin := g.CaptureBegin(r.stream)
	if r.poolGraph != nil {
		begin = g.CaptureBeginSharing(r.stream, r.poolGraph)
	}
	if begin != nil {
		g.Close()
		return begin
	}
	st.Reset()
	body(st)
	bodyErr := st.Err()
	endErr := g.CaptureEnd()
	st.Reset() // the capture's intermediates stay in the graph's own memory pool
	if bodyErr != nil || endErr != nil {
		g.Close()
		if bodyErr != nil {
			return fmt.Errorf("fl: capturing the training step: %w", bodyErr)
		}
		return fmt.Errorf("fl: capturing the training step: %w", endErr)
	}
	ss.graph = g
	if r.poolGraph == nil {
		r.poolGraph = g // owned by ss; the pool outlives it while another graph shares it
	}
	return nil
}

// GraphStatus reports how many training steps the run has captured as CUDA graphs (one
// per model and phase) and the error of a capture that failed (which stopped the run);
// both are zero on the CPU or with graphs off.
func (r *Run) GraphStatus() (captured int, err error) { return r.graphsCaptured, r.graphErr }
