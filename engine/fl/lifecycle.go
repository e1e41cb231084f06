// Package fl is pfl's federated round loop: sample clients, train the K sampled clients
// together as one client-stacked model, aggregate the shared part, keep the personal parts
// with their clients, and evaluate every client's personalized model.
//
// An algorithm is a Strategy, written against this package's exported API only (the
// built-in ones are in engine/fl/algo, one file each, plus one line in its registry). It
// says which parameters are personal (by role, never by name) and overrides only the hooks
// where it differs from FedAvg. The hooks are grouped by the stage of the lifecycle they
// serve, one interface per stage (strategy.go: PrepareStage, TrainStage, GenerateStage,
// ServerStage, EvalStage), each returning a table of its hooks whose nil fields take the
// default, and every hook works on the K clients of a stack at once. hooksOf (below) asks
// each stage once: New once per run, Shape and Measure once before a run; nothing else in
// the package asks a strategy what it implements. This is the lifecycle's one description;
// the README and docs/design.md link here. In call order, by stage:
//
// Before a run starts (Shape, Measure: open.go), PrepareHooks.Shape may change the model
// spec the run builds (FedPerfix: prefix adapters in every block) or refuse it (TransFed:
// anything but a FocalNet).
//
// When a run starts (New), the rest of PrepareHooks:
//   - Wrap changes every model the run builds (FedRoD: a second head; Ditto, APFL and
//     pFedMe: a personal model joined beside the shared one).
//   - Bind shows the strategy the run: data, global model, device (FedTP builds its
//     hypernetwork here).
//   - EveryClient trains every client every round; with ServerSample the server update
//     then reads K of them.
//   - Every parameter is sorted once: personal (Personal: a row per client, kept by the
//     client), generated (GenerateHooks.Generated: made by the server for each client), or
//     shared (averaged).
//
// Each round (Run.Round), for the K sampled clients:
//  1. Prepare: the stacked model's row k becomes client k's model: the global shared
//     values, the client's personal rows, and GenerateHooks.Generate's parameters.
//  2. Local training (TrainHooks): first Start may change the prepared rows (pFedMe: the
//     personal model starts at the global one); then phase by phase (Phases; default one
//     phase of the configured epochs over every parameter). Each step's loss is Loss
//     (default: each client's mean cross-entropy over its real samples) plus Penalty, and
//     the update is Optimizer's Step (default: SGD with the run's learning rate, momentum
//     and weight decay, one state per client, reset every round). A Step hook owns the whole
//     step instead: it takes Batches consecutive batches of each client's plan (Per-FedAvg:
//     two or three) and updates the parameters as it likes (pFedMe: K inner steps, then the
//     outer one). On CUDA a phase's step is captured once as a CUDA graph and replayed,
//     unless HostStep (pFedGP: the loss is computed on the host): then every step runs
//     eagerly.
//  3. Server update: GenerateHooks.LearnSum and LearnApply update the generator from the
//     generated parameters' change; ServerHooks.Aggregate folds the clients' shared values
//     into the global model (default: the weighted mean Σ_k (m_k/M) θ_k; ServerHooks.Weights:
//     other weights); the personal rows go back to each client's store.
//  4. Evaluation (EvalHooks), when due (EvalFedPerfix: before step 3), of every client in
//     stacked chunks: prepared as in 1 (EvalFedPerfix: a trained client as it trained),
//     fine-tuned (FineTune, not kept; its steps are the default step, never a Step hook's,
//     and its optimizer is TrainHooks.Optimizer's for phase FineTunePhase), then Predict
//     gives the logits (default: the model's forward; KNN mixes in a nearest-neighbour
//     vote). Embed and Condition first see the chunk's clients' training samples (pFedGP
//     fits each client's GP).
//
// Across processes (server.go) the weighted mean of the trained values (through
// ServerHooks.AggregateMean) is a per-rank partial sum, all-reduced; the generator's
// LearnSum runs on every rank over all the round's clients, their trained rows gathered; a run across processes of an Aggregate without
// AggregateMean is refused (checkShardable).
//
// Accounting: pfl's resource table (resources.go) counts a training sample as one forward
// and backward pass, or TrainHooks.Passes of them (APFL's two models); Measure, the memory
// a run will hold, counts the generator's parameters as GenerateHooks.ParamCount says.
//
// Checkpoints hold the global model, the store of personal rows and ServerHooks.State's
// tensors; everything random derives from (seed, purpose, round, client), so nothing else
// needs saving. The novel-client study (novel.go) fine-tunes a generator through
// GenerateHooks.Tune.
package fl

import (
	"fmt"
	"io"
)

// hooks are the strategy's lifecycle hooks (strategy.go), resolved once when a run starts;
// a nil hook takes the default.
type hooks struct {
	prep   PrepareHooks
	train  TrainHooks
	gen    *GenerateHooks // nil: no parameter is generated
	server ServerHooks
	eval   EvalHooks
	closer io.Closer // what the strategy holds (a Bind's tensors), closed with the run
}

// hooksOf asks each stage of s for its hooks, once.
func hooksOf(s Strategy) hooks {
	var h hooks
	if p, ok := s.(PrepareStage); ok {
		h.prep = p.PrepareHooks()
	}
	if t, ok := s.(TrainStage); ok {
		h.train = t.TrainHooks()
	}
	if g, ok := s.(GenerateStage); ok {
		gh := g.GenerateHooks()
		h.gen = &gh
	}
	if sv, ok := s.(ServerStage); ok {
		h.server = sv.ServerHooks()
	}
	if e, ok := s.(EvalStage); ok {
		h.eval = e.EvalHooks()
	}
	h.closer, _ = s.(io.Closer)
	return h
}

// check reports hooks that cannot work together, naming the strategy.
func (h hooks) check(name string) error {
	if g := h.gen; g != nil && (g.Generated == nil || g.Generate == nil || g.LearnSum == nil || g.LearnApply == nil) {
		return fmt.Errorf("fl: %s: a generator needs Generated, Generate, LearnSum and LearnApply", name)
	}
	if e := h.eval; (e.Embed == nil) != (e.Condition == nil) || (e.Condition != nil && e.Predict == nil) {
		return fmt.Errorf("fl: %s: Embed and Condition go together, with Predict", name)
	}
	if e := h.eval; e.KNN.K != 0 && e.Predict != nil {
		return fmt.Errorf("fl: %s: a KNN vote mixes into the model's own forward; it goes without Predict", name)
	}
	if h.train.Step != nil && h.train.Batches < 1 {
		return fmt.Errorf("fl: %s: a Step takes at least one batch (Batches %d)", name, h.train.Batches)
	}
	return nil
}

// everyClient reports whether every client trains every round (PrepareHooks.EveryClient).
func (h hooks) everyClient() bool { return h.prep.EveryClient }

// sampledServer reports whether the server update reads a sample of the clients that
// trained (PrepareHooks.ServerSample, with EveryClient).
func (h hooks) sampledServer() bool { return h.prep.EveryClient && h.prep.ServerSample }

// phases are the local training's phases (step 2 of the lifecycle).
func (h hooks) phases(epochs int) []Phase {
	if h.train.Phases != nil {
		return h.train.Phases(epochs)
	}
	return []Phase{{Epochs: epochs, Train: AllParams}}
}

// perStep is how many batches one training step of phase takes: a Step hook's count for
// the local training's phases, else 1 (fine-tuning before evaluation takes the default
// step).
func (h hooks) perStep(phase int) int {
	if h.train.Step != nil && phase != FineTunePhase {
		return h.batchesPerStep()
	}
	return 1
}

// batchesPerStep is a Step hook's batches, else 1.
func (h hooks) batchesPerStep() int {
	if h.train.Step != nil {
		return max(h.train.Batches, 1)
	}
	return 1
}

// BatchesPerStep is how many batches one step of s's local training takes: its Step hook's
// count (Per-FedAvg's two or three), else 1. With Config.DropLast a client takes a step
// only with that many whole batches of its own samples.
func BatchesPerStep(s Strategy) int { return hooksOf(s).batchesPerStep() }

// newOptimizer makes a phase's local optimizer.
func (h hooks) newOptimizer(phase int, c SGDConfig) func() Optimizer {
	return func() Optimizer {
		if h.train.Optimizer != nil {
			return h.train.Optimizer(phase, c)
		}
		return NewSGD(c)
	}
}

// weights are the server's weights of clients holding sizes training samples: m_k/M, or
// ServerHooks.Weights'.
func (h hooks) weights(sizes []int) []float64 {
	if h.server.Weights != nil {
		return h.server.Weights(sizes)
	}
	return Weights(sizes)
}

// passes is the forward and backward passes a training sample costs (TrainHooks.Passes).
func (h hooks) passes() float64 {
	if h.train.Passes > 0 {
		return h.train.Passes
	}
	return 1
}

// knn is the evaluation's nearest-neighbour vote, nil when off (a KNN of no neighbours is
// no vote).
func (h hooks) knn() *KNN {
	if h.eval.KNN.K == 0 {
		return nil
	}
	return &h.eval.KNN
}
