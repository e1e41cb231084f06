package fl

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
	"pfl/engine/rng"
)

// Run is a federated training run in progress. It owns its models and the client store.
type Run struct {
	cfg         Config
	strat       Strategy
	fed         *data.Federated
	train, test data.Samples
	trainable   []int // clients that may be sampled (all but the novel ones)
	serverK     int   // clients per server update when it reads a sample (PrepareHooks.ServerSample: the configured PerRound)

	global   model.Model    // one row: the shared values, and every personal parameter's initial value
	store    []*cuda.Tensor // per parameter index: [N, ...] rows of all clients when personal, else nil
	personal []bool
	hooks    hooks // the strategy's lifecycle hooks (lifecycle.go)
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
	r, err := newRun(cfg, strat, fed, train, test)
	if err != nil {
		return nil, err
	}
	g, err := cuda.NewGenerator(rng.Derive(rng.Key{Seed: r.cfg.Seed, Purpose: "init", Round: -1, Client: -1}), r.cfg.Device)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	r.build = r.wrapped(build)
	if err := r.buildModels(ctx, g); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.bind(ctx); err != nil {
		r.Close()
		return nil, err
	}
	if r.cfg.Graphs && r.cfg.Device.IsCUDA() {
		if r.stream, err = cuda.NewStream(r.cfg.Device); err != nil {
			r.Close()
			return nil, err
		}
	}
	if err := r.sortParams(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// newRun checks cfg against the federation and the strategy's hooks, before anything is
// built: the trainable clients, and every client training every round when the strategy
// says so (PrepareHooks.EveryClient).
func newRun(cfg Config, strat Strategy, fed *data.Federated, train, test data.Samples) (*Run, error) {
	cfg.defaults()
	r := &Run{cfg: cfg, strat: strat, hooks: hooksOf(strat), fed: fed, train: train, test: test}
	for c := range fed.Part.Train {
		if !slices.Contains(fed.Part.Novel, c) {
			r.trainable = append(r.trainable, c)
		}
	}
	if err := cfg.Validate(len(r.trainable)); err != nil {
		return nil, err
	}
	if err := r.hooks.check(strat.Name()); err != nil {
		return nil, err
	}
	if r.hooks.everyClient() {
		r.serverK = cfg.PerRound
		r.cfg.PerRound = len(r.trainable)
	}
	if err := r.checkShardable(); err != nil {
		return nil, err
	}
	return r, nil
}

// wrapped is build with the strategy's PrepareHooks.Wrap applied to every model it builds.
func (r *Run) wrapped(build Builder) Builder {
	wrap := r.hooks.prep.Wrap
	if wrap == nil {
		return build
	}
	classes := 0
	if r.fed.Train != nil {
		classes = r.fed.Train.Classes
	}
	return func(k int, g *cuda.Generator) (model.Model, error) {
		m, err := build(k, g)
		if err != nil {
			return nil, err
		}
		wrapped, err := wrap(m, Wrapping{Build: build, Gen: g, Classes: classes})
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("fl: %s: %w", r.strat.Name(), err)
		}
		return wrapped, nil
	}
}

// buildModels builds the run's models from g: the global model, the stacked model of
// this rank's share of the round's clients (all of them in one process; the shares' sizes
// do not change from round to round), the evaluation chunk's, and the single client's
// (Sequential) or the client groups' (workers.go).
func (r *Run) buildModels(ctx context.Context, g *cuda.Generator) error {
	models := []*model.Model{&r.global, &r.stacked, &r.evalM}
	lo, hi := 0, r.cfg.PerRound
	if r.distributed() {
		lo, hi = share(r.cfg.PerRound, r.cfg.Group.Rank(), r.cfg.Group.World())
	}
	ks := []int{1, hi - lo, r.cfg.EvalChunk}
	if r.cfg.Sequential {
		models, ks = append(models, &r.single), append(ks, 1)
	}
	for i, k := range ks {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A builder's error comes with a nil pointer inside the interface; only a built
		// model is stored, so Close never calls a method on it.
		m, err := r.build(k, g)
		if err != nil {
			return err
		}
		*models[i] = m
	}
	if r.cfg.Sequential {
		return nil
	}
	return r.buildGroups(ctx, hi-lo, g)
}

// bind checks the strategy's KNN vote against the model and shows it the run
// (PrepareHooks.Bind).
func (r *Run) bind(ctx context.Context) error {
	name := r.strat.Name()
	if knn := r.hooks.knn(); knn != nil {
		if err := checkKNN(*knn, r.global); err != nil {
			return fmt.Errorf("fl: %s: %w", name, err)
		}
	}
	bind := r.hooks.prep.Bind
	if bind == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg := r.cfg
	if err := bind(Env{Fed: r.fed, Model: r.global, Device: cfg.Device, DType: cfg.DType, Seed: cfg.Seed, Batch: cfg.Batch}); err != nil {
		return fmt.Errorf("fl: %s: %w", name, err)
	}
	return nil
}

// sortParams sorts every parameter once: personal (a row per client in the store, every
// client starting from the same initial values), generated, or shared.
func (r *Run) sortParams() error {
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	n := int64(len(r.fed.Part.Train))
	for i, p := range r.global.Params().List {
		personal := r.strat.Personal(p)
		generated := r.hooks.gen != nil && r.hooks.gen.Generated(p)
		if personal && generated {
			return fmt.Errorf("fl: %s: %s is both personal and generated", r.strat.Name(), p.Name)
		}
		if generated {
			r.genIdx = append(r.genIdx, i)
		}
		r.isGen = append(r.isGen, generated)
		r.personal = append(r.personal, personal)
		var rows *cuda.Tensor
		if personal {
			rows = s.Contiguous(s.Expand(p.T, append([]int64{n}, p.Shape...)...))
			s.Keep(rows)
		}
		r.store = append(r.store, rows)
	}
	return s.Err()
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
	if r.hooks.closer != nil {
		return r.hooks.closer.Close()
	}
	return nil
}

// sample draws the round's clients from the round's own stream, sorted.
func (r *Run) sample(round int) []int { return r.sampleN(round, r.cfg.PerRound) }

// serverClients are the clients whose trained values the round's server update reads: the
// round's trained clients, or a sample of them (PrepareHooks.ServerSample) (the clients the same seed
// samples for an algorithm that trains only those).
func (r *Run) serverClients(round int, trained []int) []int {
	if !r.hooks.sampledServer() {
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

// Strategy is the run's algorithm.
func (r *Run) Strategy() Strategy { return r.strat }

// Novel lists the clients held out of training.
func (r *Run) Novel() []int { return r.fed.Part.Novel }

// Clients is the number of clients in the federation (novel ones included).
func (r *Run) Clients() int { return len(r.fed.Part.Train) }
