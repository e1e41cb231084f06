package fl

import (
	"fmt"
	"math"
	"slices"

	"pfl/cuda"
	"pfl/engine/internal/defaults"
	"pfl/engine/model"
)

// Tune modes of a generative strategy's novel clients (FedTP paper §IV-B.7, Fig. 8).
const (
	TuneEmbedding    = "embedding"    // only the client's embedding z_i
	TuneHypernetwork = "hypernetwork" // the whole hypernetwork, a private copy per client
)

// NovelConfig is the novel-client study: after training, each client held out of training
// fine-tunes its personal part on its own training split, and its test accuracy is
// measured before fine-tuning and after each epoch. Zero values take the defaults.
type NovelConfig struct {
	Epochs int     // fine-tuning epochs; default 5
	LR     float64 // SGD learning rate (no momentum, no weight decay); default the run's LR
	// Mode is what a generative strategy fine-tunes: TuneEmbedding (default) or
	// TuneHypernetwork. Other strategies fine-tune their personal parameters (Vanilla
	// Personalized-T its Q/K/V, FedRoD its personal head, FedPer its head), or the whole
	// model when they have none (FedAvg).
	Mode string
}

func (c *NovelConfig) defaults(lr float64) {
	defaults.Set(&c.Epochs, 5)
	defaults.Set(&c.LR, lr)
	defaults.Set(&c.Mode, TuneEmbedding)
}

// Validate names a field that cannot work.
func (c NovelConfig) Validate() error {
	switch {
	case c.Epochs < 0:
		return fmt.Errorf("fl: novel: epochs %d, want >= 1", c.Epochs)
	case c.LR < 0 || math.IsNaN(c.LR):
		return fmt.Errorf("fl: novel: learning rate %g, want > 0", c.LR)
	case c.Mode != "" && c.Mode != TuneEmbedding && c.Mode != TuneHypernetwork:
		return fmt.Errorf("fl: novel: mode %q, want %q or %q", c.Mode, TuneEmbedding, TuneHypernetwork)
	}
	return nil
}

// NovelCurve is the novel clients' test accuracy per fine-tuning epoch; index 0 is before
// any fine-tuning.
type NovelCurve struct {
	Tuned    string      // what was fine-tuned (a mode, "personal" or "model")
	Clients  []int       // the novel clients
	Accuracy [][]float64 // [epoch][i]: client Clients[i]
	Micro    []float64   // [epoch]: Σ correct / Σ predictions
	Mean     []float64   // [epoch]: mean of the clients' accuracies
	Std      []float64
	Loss     []float64 // [epoch]: mean of the clients' test losses
	// PerClientLoss is [epoch][i]: client Clients[i]'s mean test loss.
	PerClientLoss [][]float64
}

// FineTuneNovel runs the novel-client study. The run is left as it was: fine-tuned rows
// live only in the evaluation model, and a fine-tuned hypernetwork is restored after
// each client.
func (r *Run) FineTuneNovel(cfg NovelConfig) (NovelCurve, error) {
	defer lockThread()() // see lockThread
	if err := cfg.Validate(); err != nil {
		return NovelCurve{}, err
	}
	cfg.defaults(r.cfg.LR)
	novel := r.fed.Part.Novel
	if len(novel) == 0 {
		return NovelCurve{}, fmt.Errorf("fl: novel: the run holds no client out of training (set data.holdout)")
	}
	epochs := make([]EvalResult, cfg.Epochs+1)
	for e := range epochs {
		epochs[e] = newEvalResult(len(r.fed.Part.Test))
	}
	tuned, err := r.tuneNovel(cfg, novel, epochs)
	if err != nil {
		return NovelCurve{}, err
	}
	curve := NovelCurve{Tuned: tuned, Clients: slices.Clone(novel)}
	for _, ev := range epochs {
		ev.summarize(novel)
		acc, loss := make([]float64, len(novel)), make([]float64, len(novel))
		for i, c := range novel {
			acc[i], loss[i] = ev.Accuracy[c], ev.Loss[c]
		}
		curve.Accuracy, curve.PerClientLoss = append(curve.Accuracy, acc), append(curve.PerClientLoss, loss)
		curve.Micro, curve.Mean, curve.Std = append(curve.Micro, ev.Micro), append(curve.Mean, ev.Mean), append(curve.Std, ev.Std)
		var mean float64
		for _, l := range loss {
			mean += l / float64(len(loss))
		}
		curve.Loss = append(curve.Loss, mean)
	}
	return curve, nil
}

// tuneNovel fine-tunes and evaluates the novel clients, filling epochs[e] with the
// evaluation after e epochs, and says what it tuned.
func (r *Run) tuneNovel(cfg NovelConfig, novel []int, epochs []EvalResult) (string, error) {
	if r.hooks.gen == nil {
		return r.tuneRows(cfg, novel, epochs)
	}
	if r.hooks.gen.Tune == nil {
		return "", fmt.Errorf("fl: novel: %s cannot fine-tune its generator", r.strat.Name())
	}
	params, err := r.hooks.gen.Tune(cfg.Mode)
	if err != nil {
		return "", fmt.Errorf("fl: novel: %w", err)
	}
	s := cuda.NewScope()
	defer s.Close()
	restore := snapshot(s, params)
	defer restore()
	if cfg.Mode == TuneEmbedding {
		// embeddings are per client, so a chunk of clients tunes together
		return cfg.Mode, r.chunks(novel, func(ids []int, valid int) error {
			return r.tuneGenerator(cfg, params, r.evalM, ids, valid, epochs)
		})
	}
	single, err := r.singleModel()
	if err != nil {
		return "", err
	}
	for _, c := range novel { // φ is shared: each client tunes its own copy
		if err := r.tuneGenerator(cfg, params, single, []int{c}, 1, epochs); err != nil {
			return "", err
		}
		restore()
	}
	return cfg.Mode, s.Err()
}

// snapshot copies params into s; the returned function writes the copies back.
func snapshot(s *cuda.Scope, params []*cuda.Tensor) func() {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	saved := make([]*cuda.Tensor, len(params))
	for i, p := range params {
		saved[i] = s.Clone(p)
	}
	s.SetGradEnabled(grad)
	return func() {
		grad := s.GradEnabled()
		s.SetGradEnabled(false)
		for i, p := range params {
			s.CopyFrom(p, saved[i])
		}
		s.SetGradEnabled(grad)
	}
}

// chunks calls f for the clients in stacked chunks of EvalChunk, the last one padded by
// repeating its last client (valid says how many rows are real).
func (r *Run) chunks(clients []int, f func(ids []int, valid int) error) error {
	k := r.cfg.EvalChunk
	for start := 0; start < len(clients); start += k {
		ids := make([]int, k)
		for i := range ids {
			ids[i] = clients[min(start+i, len(clients)-1)]
		}
		if err := f(ids, min(k, len(clients)-start)); err != nil {
			return err
		}
	}
	return nil
}

// record evaluates m's rows into ev for the chunk's valid clients.
func (r *Run) record(s *cuda.Scope, m model.Model, ids []int, valid int, ev *EvalResult) error {
	e, err := r.evalModel(s, m, ids)
	if err != nil {
		return err
	}
	for i := 0; i < valid; i++ {
		ev.set(ids[i], e, i)
	}
	return nil
}

// tuneRows fine-tunes the personal rows (or, without personal parameters, the whole
// model) of the novel clients in the evaluation model with plain SGD, one epoch at a time.
func (r *Run) tuneRows(cfg NovelConfig, novel []int, epochs []EvalResult) (string, error) {
	tuned, sel := "personal", func(p *model.Param) bool { return r.strat.Personal(p) }
	if !slices.Contains(r.personal, true) {
		tuned, sel = "model", AllParams
	}
	var train []*cuda.Tensor
	for _, p := range r.evalM.Params().List {
		if !p.Buffer && sel(p) {
			train = append(train, p.T)
		}
	}
	return tuned, r.chunks(novel, func(ids []int, valid int) error {
		s := cuda.NewScope()
		defer s.Close()
		r.load(s, r.evalM, ids)
		if err := r.record(s, r.evalM, ids, valid, &epochs[0]); err != nil {
			return err
		}
		opt := NewSGD(SGDConfig{LR: cfg.LR})
		defer opt.Close()
		for e := 1; e <= cfg.Epochs; e++ {
			_, _, err := r.runSteps(s, nil, ids, r.fed.Part.Train, len(r.History), novelPhase+e, 1, 0, 1, nil,
				func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor {
					per := r.loss(st, r.evalM, bs[0], passes[0])
					grads := st.Grad([]*cuda.Tensor{st.Sum(per, false)}, nil, train, cuda.GradOptions{AllowUnused: true})
					if st.Err() == nil {
						opt.Step(st, train, ZeroMissing(st, grads, train), active)
					}
					return per
				})
			if err != nil {
				return fmt.Errorf("fl: novel: epoch %d: %w", e, err)
			}
			if err := r.record(s, r.evalM, ids, valid, &epochs[e]); err != nil {
				return err
			}
		}
		return nil
	})
}

// novelPhase numbers the fine-tuning epochs' batch-order streams apart from training's.
const novelPhase = 2000

// tuneGenerator fine-tunes params, the generator parameters of cfg.Mode, for the clients
// ids (the first valid rows real) through the generated weights, in place: each step
// generates the clients' weights, takes the loss gradient with respect to them, and
// carries it back to the generator with one vector-Jacobian product (the chain rule, so
// the step is plain SGD on the loss as a function of the generator). Shared parameters
// stay as trained.
func (r *Run) tuneGenerator(cfg NovelConfig, params []*cuda.Tensor, m model.Model, ids []int, valid int, epochs []EvalResult) error {
	s := cuda.NewScope()
	defer s.Close()
	rows := cuda.FromSlice(s, r.cfg.Device, ids64(ids))
	weight := make([]float32, len(ids)) // a padded row repeats a client: it must not count twice
	for i := range weight[:valid] {
		weight[i] = 1
	}
	w := cuda.FromSlice(s, r.cfg.Device, weight)
	genParams := make([]*cuda.Tensor, len(r.genIdx))
	for j, i := range r.genIdx {
		genParams[j] = m.Params().List[i].T
	}
	evaluate := func(ev *EvalResult) error {
		s.SetGradEnabled(false)
		r.loadGenerated(s, m, r.hooks.gen.Generate(s, rows))
		return r.record(s, m, ids, valid, ev)
	}
	r.load(s, m, ids)
	if err := evaluate(&epochs[0]); err != nil {
		return err
	}
	for e := 1; e <= cfg.Epochs; e++ {
		s.SetGradEnabled(true)
		_, _, err := r.runSteps(s, nil, ids, r.fed.Part.Train, len(r.History), novelPhase+e, 1, 0, 1, nil,
			func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor {
				generated := r.hooks.gen.Generate(st, bs[0].Rows)
				r.loadGenerated(st, m, generated)
				per := r.loss(st, m, bs[0], passes[0])
				loss := st.Sum(st.Mul(per, st.To(w, per.DType())), false)
				dW := st.Grad([]*cuda.Tensor{loss}, nil, genParams, cuda.GradOptions{AllowUnused: true})
				dPhi := st.Grad(generated, ZeroMissing(st, dW, genParams), params, cuda.GradOptions{AllowUnused: true})
				if st.Err() == nil {
					st.SetGradEnabled(false)
					for i, p := range params {
						if dPhi[i] != nil {
							st.CopyFrom(p, st.AddScaled(p, dPhi[i], -cfg.LR))
						}
					}
					st.SetGradEnabled(true)
				}
				return per
			})
		if err != nil {
			return fmt.Errorf("fl: novel: epoch %d: %w", e, err)
		}
		if err := evaluate(&epochs[e]); err != nil {
			return err
		}
	}
	return s.Err()
}

// ZeroMissing replaces the nil gradients of parameters a loss does not reach (what
// cuda.GradOptions.AllowUnused leaves nil) by zeros, so that an update can step them all.
func ZeroMissing(s *cuda.Scope, grads, params []*cuda.Tensor) []*cuda.Tensor {
	for i, g := range grads {
		if g == nil {
			grads[i] = s.Zeros(params[i].DType(), params[i].Device(), params[i].Shape()...)
		}
	}
	return grads
}

// singleModel is the one-client model, built on first use when the run is not
// sequential.
func (r *Run) singleModel() (model.Model, error) {
	if r.single != nil {
		return r.single, nil
	}
	g, err := cuda.NewGenerator(0, r.cfg.Device) // its values are always overwritten by load
	if err != nil {
		return nil, err
	}
	defer g.Close()
	m, err := r.build(1, g)
	if err != nil {
		return nil, err
	}
	r.single = m
	return m, nil
}
