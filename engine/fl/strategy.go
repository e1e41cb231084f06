// Package fl is pfl's federated round loop: sample clients, train the K sampled clients
// together as one client-stacked model, aggregate the shared part, keep the personal parts
// with their clients, and evaluate every client's personalized model.
//
// An algorithm is a Strategy: one file, plus one line in registry.go. It says which
// parameters are personal (by role, never by name) and overrides only the hooks where it
// differs from FedAvg; each hook is an interface the Strategy may implement, and every
// hook works on the K clients of a stack at once. The lifecycle, in call order:
//
// Before a run starts, Shaper.Shape may change the model spec the run builds (FedPerfix:
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
// Checkpoints hold the global model, the store of personal rows and Stateful.State's
// tensors; everything random derives from (seed, purpose, round, client), so nothing else
// needs saving.
package fl

import (
	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// Strategy is a federated algorithm.
type Strategy interface {
	// Name is the algorithm's name as configs spell it.
	Name() string
	// Personal reports whether p stays with its client between rounds instead of being
	// aggregated. It is called once per parameter when a run starts.
	Personal(p *model.Param) bool
}

// Regularizer is a Strategy that adds a term to every client's local loss.
type Regularizer interface {
	Strategy
	// Penalty returns the added loss for the stacked parameters params (summed over
	// clients), given the global values the round started from (one row, broadcast).
	Penalty(s *cuda.Scope, params, global []*cuda.Tensor) *cuda.Tensor
}

// Phase is part of a client's local training: Epochs epochs (at most Steps steps when
// Steps > 0) in which only the parameters Train selects are updated.
type Phase struct {
	Epochs int
	Steps  int
	Train  func(p *model.Param) bool
}

// Phased is a Strategy whose local training runs in phases (FedRep: the head, then the
// body). epochs is the configured number of local epochs.
type Phased interface {
	Strategy
	Phases(epochs int) []Phase
}

// FineTuner is a Strategy that fine-tunes each client's model on its own training data
// before it is evaluated, without keeping the change (FedBABU: the head; Per-FedAvg: one
// adaptation step).
type FineTuner interface {
	Strategy
	FineTune() Phase
}

// FineTunePhase is the phase number of FineTuner's phase: what LocalOptimizer.Optimizer is
// called with for it, and what numbers its batch-order streams.
const FineTunePhase = 1000

// Optimizer is a local update rule over client-stacked parameters [K, ...]. Step changes
// params in place from grads for the clients active marks ([K] float32, 1 or 0: a client
// whose epochs are done neither moves nor changes its state). The state lives at fixed
// addresses for the whole run (a CUDA graph replays the step): Reset zeroes it in place at
// the start of every round, as a client's fresh optimizer.
type Optimizer interface {
	Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor)
	Reset(s *cuda.Scope)
	Close() error
}

// SGDConfig is the run's local optimizer setting.
type SGDConfig struct{ LR, Momentum, WeightDecay float64 }

// NewSGD is the default local optimizer: torch.optim.SGD over stacked clients.
func NewSGD(c SGDConfig) Optimizer { return &sgd{lr: c.LR, momentum: c.Momentum, wd: c.WeightDecay} }

// LocalOptimizer is a Strategy with its own local update rule (pFedMe's inner problem, a
// proximal step, Adam): Optimizer is called once per (model, phase) of the run with the
// run's setting.
type LocalOptimizer interface {
	Strategy
	Optimizer(phase int, run SGDConfig) Optimizer
}

// Aggregator is a Strategy with its own server update of the shared parameters (a server
// optimizer, a robust mean). global are the global model's shared parameters (one row
// each, updated in place), trained the round's clients' values [K, ...] in the same order,
// weights [K] the clients' m_k/M. The default is AverageInto.
type Aggregator interface {
	Strategy
	Aggregate(s *cuda.Scope, global, trained []*cuda.Tensor, weights *cuda.Tensor) error
}

// Weighter is a Strategy whose server weighs the round's clients otherwise than by their
// sample counts m_k/M (pFedGP: its official trainers average the clients uniformly).
// ClientWeights returns the weights of clients holding sizes training samples, in order,
// summing to 1; they replace m_k/M everywhere the server update reads the clients'
// weights (Aggregator, Generative.Learn).
type Weighter interface {
	Strategy
	ClientWeights(sizes []int) []float64
}

// Predictor is a Strategy whose clients predict otherwise than with their model's forward
// pass (APFL's mixture, Ditto's personal model, a GP classifier): logits [K, B, classes]
// for inputs x [K, B, ...] with m's rows prepared for the clients.
type Predictor interface {
	Strategy
	Predict(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor
}

// Embedded is a chunk's clients' training samples as a Conditioner sees them: Feat
// [K, M, D] (what its Embed returns, every training sample of the client in order, padded
// to the longest), labels Y and Mask [K, M] (1 for a real sample).
type Embedded struct{ Feat, Y, Mask *cuda.Tensor }

// Conditioner is a Predictor whose clients predict from their own training samples
// (pFedGP: a GP classifier conditioned on the client's training features). Before a
// chunk's test batches the evaluation embeds every training sample of the chunk's clients
// with Embed (one pass in order, no augmentation, evaluation mode, grad disabled) and hands
// them to Condition, which prepares each row's predictor; Predict then serves the chunk's
// test batches, row k for client ids[k] (a chunk is padded with repeats of its last
// client).
type Conditioner interface {
	Predictor
	// Embed maps inputs x [K, B, ...] through m's rows to what Condition reads [K, B, D].
	Embed(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor
	// Condition prepares row k's predictor from client ids[k]'s training samples, embedded
	// by m (whose parameters it may read too: pFedGP-IP's inducing inputs).
	Condition(s *cuda.Scope, m model.Model, ids []int, train Embedded) error
}

// HostStep is a Strategy whose training step reads device values on the host in the
// middle (pFedGP: each client's GP is fitted on the host to the batch's features, and the
// step waits for it): a CUDA graph cannot capture that, so when HostStep returns true its
// steps always run eagerly, and its Loss may read Go values such as Batch.Clients.
type HostStep interface {
	Strategy
	HostStep() bool
}

// EveryRound is a Strategy whose rounds train every client that can train, whatever the
// configured clients per round (Local, as FedTP's official local training).
type EveryRound interface {
	Strategy
	EveryClient() bool
}

// SampledServer is an EveryRound strategy whose server update reads only a sample of the
// clients that trained: the configured clients per round (Config.PerRound), drawn from the
// round's sampling stream as every other algorithm's clients are (pFedMe's Alg. 1 and its
// authors' serverpFedMe.py: every client trains every round, the server aggregates a
// random subset of them). The other clients' trained personal rows are kept.
type SampledServer interface {
	EveryRound
	ServerSample() bool
}

// allParams trains every parameter.
func allParams(*model.Param) bool { return true }

// roleSet is the shared shape of the role-based algorithms.
type roleSet struct {
	name  string
	roles []model.Role
}

func (r roleSet) Name() string { return r.name }

func (r roleSet) Personal(p *model.Param) bool {
	for _, role := range r.roles {
		if p.Role == role {
			return true
		}
	}
	return false
}

// Batch is one client-stacked training batch: X [K, B, ...], labels Y and mask [K, B]
// (1 for a real sample), and the clients of the stack rows, in Go and on the device.
type Batch struct {
	X, Y, Mask *cuda.Tensor
	Clients    []int
	Rows       *cuda.Tensor // int64 [K], the same ids as Clients
}

// Objective is a Strategy with its own local loss (FedRoD: a balanced-softmax loss on the
// generic head plus a loss on the personal head).
type Objective interface {
	Strategy
	// Loss is each client's loss [K] on batch b, computed with model m and pass.
	Loss(s *cuda.Scope, m model.Model, b Batch, pass *model.Pass) *cuda.Tensor
}

// Env is what a Binder sees of its run.
type Env struct {
	Fed    *data.Federated
	Model  model.Model // the global model (one row): parameters, roles and shapes
	Device cuda.Device
	DType  cuda.DType
	Seed   uint64
	Batch  int // the local batch size
}

// Binder is a Strategy that needs to see the run before the first round (FedRoD: every
// client's label counts; FedTP: the parameters its hypernetwork generates). Bind is called
// once, by New; a Binder that holds tensors also implements io.Closer, and Run.Close
// closes it. A Binder value serves one run at a time.
type Binder interface {
	Strategy
	Bind(env Env) error
}

// Generative is a Strategy whose server generates some of every client's parameters
// (FedTP: a hypernetwork generates the Q/K/V projections). Generated parameters are
// neither averaged nor kept per client: each round, and for each evaluation, they are
// generated afresh, then trained locally as ordinary parameters.
type Generative interface {
	Strategy
	// Generated reports whether the server generates p. It is called once per parameter
	// when a run starts; a parameter cannot be both generated and personal.
	Generated(p *model.Param) bool
	// Generate returns the generated parameters of the clients rows (int64 [K]), in the
	// model's parameter order, each [K, Shape...]. With grad enabled on s they carry the
	// graph that Learn differentiates.
	Generate(s *cuda.Scope, rows *cuda.Tensor) []*cuda.Tensor
	// Learn updates the server after local training: generated as Generate returned them,
	// trained the clients' values after local training, weights [K] the clients' m_i/M.
	Learn(s *cuda.Scope, generated, trained []*cuda.Tensor, weights *cuda.Tensor)
}

// Stateful is a Strategy with server state that lives across rounds (FedTP: φ, z and the
// optimizer's momentum): checkpoints save these tensors and restore copies into them.
type Stateful interface {
	Strategy
	State() (names []string, tensors []*cuda.Tensor)
}

// Shaper is a Strategy that needs a plug-in in the model it trains (FedPerfix: prefix
// adapters) or a kind of model (TransFed: a FocalNet). Shape returns the spec to build from
// the configured one: it adds the plug-in with the algorithm's defaults when the spec has
// none, uses a spec that sets it as given, and refuses a model that cannot take it.
type Shaper interface {
	Strategy
	Shape(s model.Spec) (model.Spec, error)
}

// Wrapper is a Strategy that changes the model (FedRoD: a second, personal head; Ditto: a
// personal copy beside the shared model, joined with model.Join). New wraps every model it
// builds: m was built by build for K clients, and build makes more models like it (with
// K = m.Params().K); gen is the generator m drew from (nil when the model is declared only,
// for accounting: then nothing is allocated). The wrapper owns the model it wraps.
type Wrapper interface {
	Strategy
	Wrap(m model.Model, build Builder, gen *cuda.Generator) (model.Model, error)
}

// Starter is a Strategy that changes the clients' prepared rows (step 1) before their local
// training (pFedMe: each personal model starts the round at the global model). Start runs
// with grad disabled, once per local training of a stack (once per client when clients
// train one at a time).
type Starter interface {
	Strategy
	Start(s *cuda.Scope, m model.Model)
}

// StepInput is one local training step as a Stepper sees it.
type StepInput struct {
	Model   model.Model
	Batches []Batch        // Stepper.Batches consecutive batches of each client's plan
	Passes  []*model.Pass  // one per batch: the clients' dropout streams, the BatchNorm mask
	Params  []*cuda.Tensor // the phase's trained parameters of Model, in model order
	Global  []*cuda.Tensor // their global values (one row, broadcast), as Regularizer sees them
	Opt     Optimizer      // the phase's optimizer (LocalOptimizer's, else the run's SGD)
	Active  *cuda.Tensor   // [K] float32: 1 while the client's epochs last, else 0
	// Loss is each client's local loss [K] on batch b computed with m (Model or one of its
	// parts): Objective.Loss when the strategy has one, else the mean cross-entropy.
	Loss func(s *cuda.Scope, m model.Model, b Batch, pass *model.Pass) *cuda.Tensor
}

// Stepper is a Strategy that owns its local training step (Per-FedAvg: a step on two or
// three batches; pFedMe: K inner steps on one batch, then the outer step). The run plans
// the epochs as usual and hands each step Batches() consecutive batches of every client's
// plan (a client whose plan ends inside a step gets idle batches, mask 0, for the rest; a
// client is active in a step while its first batch is real). Step must leave an inactive
// client's rows and optimizer state alone, as Optimizer.Step does, and read only device
// values that change between steps (a captured step is replayed, see runSteps). It returns
// each client's loss [K], which the round reports. Fine-tuning before evaluation does not
// go through Step.
type Stepper interface {
	Strategy
	Batches() int
	Step(s *cuda.Scope, in StepInput) *cuda.Tensor
}
