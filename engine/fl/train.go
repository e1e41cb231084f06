package fl

import (
	"fmt"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// Local training (step 2 of the lifecycle, lifecycle.go): the clients of a stack load their
// rows, then train phase by phase, each step the strategy's loss and update rule (default:
// SGD, below) over all K clients at once.

// trainClients trains the round's clients local (this rank's share of met.Clients) and
// returns the sum of their per-step mean losses and how many (client, step) pairs it
// holds: one at a time (Config.Sequential), in client groups on the CPU's threads
// (workers.go), or as one stack.
func (r *Run) trainClients(s *cuda.Scope, local []int, generated []*cuda.Tensor, round int, met *RoundMetrics) (sum, count float64, err error) {
	switch {
	case r.cfg.Sequential:
		for i, c := range met.Clients {
			rows := make([]*cuda.Tensor, len(generated))
			for j, g := range generated {
				rows[j] = s.Narrow(g, 0, int64(i), 1)
			}
			l, n, err := r.localTrain(s, r.single, []int{c}, rows, round, met)
			if err != nil {
				return 0, 0, err
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
		l, n, err := r.trainGroups(s, local, generated, round, met)
		if err != nil {
			return 0, 0, err
		}
		sum, count = sumLosses(l), n
	default:
		l, n, err := r.localTrain(s, r.stacked, local, generated, round, met)
		if err != nil {
			return 0, 0, err
		}
		sum, count = sumLosses(l), n
	}
	return sum, count, nil
}

// localTrain runs the clients' local training on m (loading their rows first), phase by
// phase, and returns per phase each client's sum of its per-step mean losses, and how many
// (client, step) pairs they hold.
func (r *Run) localTrain(s *cuda.Scope, m model.Model, ids []int, generated []*cuda.Tensor, round int, met *RoundMetrics) ([][]float64, float64, error) {
	r.load(s, m, ids)
	r.loadGenerated(s, m, generated)
	if start := r.hooks.train.Start; start != nil {
		grad := s.GradEnabled()
		s.SetGradEnabled(false)
		start(s, m)
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
	penalty := r.hooks.train.Penalty
	per := r.hooks.perStep(phase)
	ss, err := r.phaseState(m, phase, ph.Epochs, ph.Steps, per, parts, r.hooks.newOptimizer(phase, SGDConfig{LR: r.cfg.LR, Momentum: r.cfg.Momentum, WeightDecay: r.cfg.WeightDecay}))
	if err != nil {
		return nil, 0, err
	}
	opt := ss.opt // the phase's, kept with its buffers for the whole run
	if step := r.hooks.train.Step; step != nil && phase != FineTunePhase {
		return r.runSteps(s, ss, ids, parts, round, phase, ph.Epochs, ph.Steps, per, met, func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor {
			return step(st, StepInput{Model: m, Batches: bs, Passes: passes, Params: train, Global: global,
				Opt: opt, Active: active, Loss: r.loss})
		})
	}
	return r.runSteps(s, ss, ids, parts, round, phase, ph.Epochs, ph.Steps, 1, met, func(st *cuda.Scope, bs []Batch, passes []*model.Pass, active *cuda.Tensor) *cuda.Tensor {
		b, pass := bs[0], passes[0]
		perClient := r.loss(st, m, b, pass)
		loss := st.Sum(perClient, false)
		if penalty != nil {
			loss = st.Add(loss, penalty(st, train, global))
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

// loss is each client's local loss [K]: the strategy's TrainHooks.Loss, else the mean
// cross-entropy over the client's real samples.
func (r *Run) loss(s *cuda.Scope, m model.Model, b Batch, pass *model.Pass) *cuda.Tensor {
	if loss := r.hooks.train.Loss; loss != nil {
		return loss(s, m, b, pass)
	}
	return MeanCrossEntropy(s, m.Forward(s, b.X, pass), b.Y, b.Mask)
}

// stepFunc runs one training step on its consecutive batches bs (one, unless a Step hook
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

// sgd is torch.optim.SGD (momentum, weight decay, no dampening, no Nesterov) over
// client-stacked parameters [K, ...], each client with its own momentum buffer, and with a
// per-client activity a_k ∈ {0, 1}: a client whose epochs are done (a_k = 0) neither
// decays nor moves, and its buffer keeps its value, exactly as if its own optimizer had
// stopped (whatever its gradient).
//
// A step is a handful of multi-tensor calls for all parameters (not a few calls per
// parameter): the activity is reshaped once per parameter rank and broadcast.
type sgd struct {
	lr, momentum, wd float64
	bufs             []*cuda.Tensor // momentum buffers, owned; nil until the first step
}

// Step updates params in place from grads (left untouched: autograd may hand one tensor
// to two parameters). active is [K] float32. The weight-decay term is added after the
// gradient rather than before, so a step can round differently from torch's in the last
// bit.
func (o *sgd) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	a := perParam(s, params, active, 1, 0)
	if o.momentum == 0 {
		if o.wd != 0 { // p ← p·(1 − lr·λ·a)
			s.ForeachMul(params, perParam(s, params, active, -o.lr*o.wd, 1))
		}
		s.ForeachAddcmul(params, grads, a, -o.lr) // p −= lr·g·a
		return
	}
	if o.bufs == nil {
		o.bufs = make([]*cuda.Tensor, len(params))
		for i, p := range params {
			o.bufs[i] = s.Zeros(p.DType(), p.Device(), p.Shape()...)
			s.Keep(o.bufs[i])
		}
	}
	// buf ← buf·(μ·a + 1 − a) + (g + λ·p)·a: changes only where the client is active
	s.ForeachMul(o.bufs, perParam(s, params, active, o.momentum-1, 1))
	s.ForeachAddcmul(o.bufs, grads, a, 1)
	if o.wd != 0 {
		s.ForeachAddcmul(o.bufs, params, a, o.wd)
	}
	s.ForeachAddcmul(params, o.bufs, a, -o.lr) // p −= lr·buf·a
}

// PerClient views a per-client value v [K] (a step's activity, 1 or 0) as [K, 1, ...] in
// each parameter's dtype and rank, so that an update multiplied by it moves only the active
// clients' rows: one small tensor per distinct rank and dtype.
func PerClient(s *cuda.Scope, params []*cuda.Tensor, v *cuda.Tensor) []*cuda.Tensor {
	return perParam(s, params, v, 1, 0)
}

// perParam is active·mul + add [K], computed in each parameter's dtype and viewed as
// [K, 1, ...] with its rank: one small tensor per distinct rank and dtype.
func perParam(s *cuda.Scope, params []*cuda.Tensor, active *cuda.Tensor, mul, add float64) []*cuda.Tensor {
	type key struct {
		rank int
		dt   cuda.DType
	}
	views := map[key]*cuda.Tensor{}
	out := make([]*cuda.Tensor, len(params))
	for i, p := range params {
		k := key{p.Dim(), p.DType()}
		if views[k] == nil {
			shape := make([]int64, k.rank)
			for j := range shape {
				shape[j] = 1
			}
			shape[0] = -1
			v := s.To(active, k.dt)
			if mul != 1 || add != 0 {
				v = s.AddScalar(s.MulScalar(v, mul), add)
			}
			views[k] = s.Reshape(v, shape...)
		}
		out[i] = views[k]
	}
	return out
}

// Reset zeroes the momentum buffers (in place: a captured step keeps reading them).
func (o *sgd) Reset(s *cuda.Scope) {
	if o.bufs != nil {
		s.ForeachZero(o.bufs)
	}
}

// Close frees the momentum buffers.
func (o *sgd) Close() error {
	for _, b := range o.bufs {
		b.Close()
	}
	o.bufs = nil
	return nil
}
