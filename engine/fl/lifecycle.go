// Package fl is pfl's federated round loop: sample clients, train the K sampled clients
// together as one client-stacked model, aggregate the shared part, keep the personal parts
// with their clients, and evaluate every client's personalized model.
//
// An algorithm is a Strategy: one file, plus one line in registry.go. It says which
// parameters are personal (by role, never by name) and overrides only the hooks where it
// differs from FedAvg; each hook is an interface the Strategy may implement (strategy.go,
// each documented there once), and every hook works on the K clients of a stack at once.
// New resolves them once per run (hooksOf, below). This is the lifecycle's one
// description; the README and docs/design.md link here. In call order, by stage:
//
// Before a run starts (Shape, Measure: open.go), Shaper.Shape may change the model spec the run builds (FedPerfix:
// prefix adapters in every block) or refuse it (TransFed: anything but a FocalNet).
//
// When a run starts (New):
//   - Wrapper.Wrap changes every model the run builds (FedRoD: a second head; Ditto, APFL
//     and pFedMe: a personal model joined beside the shared one).
//   - Binder.Bind shows the strategy the run: data, global model, device (FedTP builds its
//     hypernetwork here).
//   - Every parameter is sorted once: personal (Personal: a row per client, kept by the
//     client), generated (Generative.Generated: made by the server for each client), or
//     shared (averaged).
//
// Each round (Run.Round), for the K sampled clients (EveryRound: all of them; a
// SampledServer's server update then reads K of them):
//  1. Prepare: the stacked model's row k becomes client k's model: the global shared
//     values, the client's personal rows, and Generative.Generate's parameters.
//  2. Local training: first Starter.Start may change the prepared rows (pFedMe: the
//     personal model starts at the global one); then phase by phase (Phased.Phases;
//     default one phase of the configured epochs over every parameter). Each step's loss
//     is Objective.Loss (default: each client's mean cross-entropy over its real samples)
//     plus Regularizer.Penalty, and the update is LocalOptimizer.Optimizer's Step (default:
//     SGD with the run's learning rate, momentum and weight decay, one state per client,
//     reset every round). A Stepper owns the whole step instead: it takes
//     Stepper.Batches consecutive batches of each client's plan (Per-FedAvg: two or three)
//     and updates the parameters as it likes (pFedMe: K inner steps, then the outer one).
//     On CUDA a phase's step is captured once as a CUDA graph and replayed, unless the
//     strategy is a HostStep (pFedGP: the loss is computed on the host): then every step
//     runs eagerly.
//  3. Server update: Generative.Learn updates the generator from the generated
//     parameters' change; Aggregator.Aggregate folds the clients' shared values into the
//     global model (default: the weighted mean Σ_k (m_k/M) θ_k; Weighter: other weights);
//     the personal rows go back to each client's store.
//  4. Evaluation, when due (EvalFedPerfix: before step 3), of every client in stacked
//     chunks: prepared as in 1 (EvalFedPerfix: a trained client as it trained), fine-tuned
//     (FineTuner.FineTune, not kept; its steps are the default step, never a Stepper's, and
//     its optimizer is LocalOptimizer.Optimizer's for phase FineTunePhase), then
//     Predictor.Predict gives the logits (default: the model's forward; a Memorizer mixes in
//     a nearest-neighbour vote). A Conditioner first sees the chunk's clients' training
//     samples, embedded by its Embed, through Condition (pFedGP fits each client's GP).
//
// Across processes (server.go) every sum over clients is a per-rank partial sum,
// all-reduced: a Generative that is a ShardedLearner splits Learn into LearnSum and
// LearnApply, an Aggregator that is a MeanAggregator reads the trained values only through
// their weighted mean (AggregateMean); a run across processes of an Aggregator or
// Generative that is neither is refused (checkShardable).
//
// Accounting (pfl's resource table, resources.go) counts a training sample as one forward
// and backward pass, or TrainingPasses.Passes of them (APFL's two models).
//
// Checkpoints hold the global model, the store of personal rows and Stateful.State's
// tensors; everything random derives from (seed, purpose, round, client), so nothing else
// needs saving.
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
		return BatchesPerStep(h.stepper)
	}
	return 1
}

// BatchesPerStep is how many batches one step of s's local training takes: a Stepper's
// count (Per-FedAvg's two or three), else 1. With Config.DropLast a client takes a step
// only with that many whole batches of its own samples.
func BatchesPerStep(s Strategy) int {
	if st, ok := s.(Stepper); ok {
		return max(st.Batches(), 1)
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
