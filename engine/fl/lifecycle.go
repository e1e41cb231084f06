package fl

// hooks are the strategy's lifecycle hooks (strategy.go), resolved once when a run starts;
// a nil hook takes the default.
type hooks struct {
	wrap      Wrapper
	bind      Binder
	gen       Generative
	phased    Phased
	objective Objective
	penalty   Regularizer
	optimizer LocalOptimizer
	aggregate Aggregator
	weigh     Weighter
	fineTune  FineTuner
	predict   Predictor
	condition Conditioner
	memory    Memorizer
	state     Stateful
	start     Starter
	stepper   Stepper
	every     bool // EveryRound: every client trains every round
	sampled   bool // SampledServer: ... and the server update reads a sample of them
	host      bool // HostStep: steps run eagerly, never captured
}

func hooksOf(s Strategy) hooks {
	var h hooks
	h.wrap, _ = s.(Wrapper)
	h.bind, _ = s.(Binder)
	h.gen, _ = s.(Generative)
	h.phased, _ = s.(Phased)
	h.objective, _ = s.(Objective)
	h.penalty, _ = s.(Regularizer)
	h.optimizer, _ = s.(LocalOptimizer)
	h.aggregate, _ = s.(Aggregator)
	h.weigh, _ = s.(Weighter)
	h.fineTune, _ = s.(FineTuner)
	h.predict, _ = s.(Predictor)
	h.condition, _ = s.(Conditioner)
	h.memory, _ = s.(Memorizer)
	if h.memory != nil && h.memory.Memory().K == 0 {
		h.memory = nil // a KNN of no neighbours is no vote
	}
	h.state, _ = s.(Stateful)
	h.start, _ = s.(Starter)
	h.stepper, _ = s.(Stepper)
	if e, ok := s.(EveryRound); ok {
		h.every = e.EveryClient()
	}
	if e, ok := s.(SampledServer); ok {
		h.sampled = h.every && e.ServerSample()
	}
	if hs, ok := s.(HostStep); ok {
		h.host = hs.HostStep()
	}
	return h
}

// phases are the local training's phases (step 2 of the lifecycle).
func (h hooks) phases(epochs int) []Phase {
	if h.phased != nil {
		return h.phased.Phases(epochs)
	}
	return []Phase{{Epochs: epochs, Train: allParams}}
}

// perStep is how many batches one training step of phase takes: a Stepper's count for the
// local training's phases, else 1 (fine-tuning before evaluation takes the default step).
func (h hooks) perStep(phase int) int {
	if h.stepper != nil && phase != FineTunePhase {
		return max(h.stepper.Batches(), 1)
	}
	return 1
}

// newOptimizer makes a phase's local optimizer.
func (h hooks) newOptimizer(phase int, c SGDConfig) func() Optimizer {
	return func() Optimizer {
		if h.optimizer != nil {
			return h.optimizer.Optimizer(phase, c)
		}
		return NewSGD(c)
	}
}

// weights are the server's weights of clients holding sizes training samples: m_k/M, or
// the Weighter's.
func (h hooks) weights(sizes []int) []float64 {
	if h.weigh != nil {
		return h.weigh.ClientWeights(sizes)
	}
	return Weights(sizes)
}
