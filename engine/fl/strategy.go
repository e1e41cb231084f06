package fl

// Every hook of the lifecycle (lifecycle.go) is one of these interfaces, which a Strategy
// implements where it differs from FedAvg.

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

// Memorizer is a Strategy whose clients predict with a KNN memory of their training data.
type Memorizer interface {
	Strategy
	Memory() KNN
}

// TrainingPasses is a Strategy whose local training costs more than one forward and
// backward pass of the model per training sample (APFL: its global and local models;
// Per-FedAvg: the meta step's second batch).
type TrainingPasses interface {
	Strategy
	Passes() float64
}

// ShardedLearner is a Generative whose Learn is a sum over the round's clients followed by
// one update of the server state, so that under training across processes every rank
// computes its clients' part of the sum, the parts are all-reduced, and every rank
// applies the same update. Learn must equal LearnApply(LearnSum(...)).
type ShardedLearner interface {
	Generative
	// LearnSum is the round's clients' part of the server gradient: one tensor per
	// server parameter, weighted by weights as Learn weights them (the m_k/M of the
	// whole round, so the parts add up to the whole).
	LearnSum(s *cuda.Scope, generated, trained []*cuda.Tensor, weights *cuda.Tensor) []*cuda.Tensor
	// LearnApply updates the server state with the summed gradient.
	LearnApply(s *cuda.Scope, sum []*cuda.Tensor)
}

// MeanAggregator is an Aggregator whose server update reads the trained values only
// through their weighted mean Σ_k w_k θ_k (pFedMe: a step of β towards it), so that across
// processes the mean is a sum of per-rank partial means, all-reduced, which every rank
// then applies. Aggregate must equal AggregateMean with the mean.
type MeanAggregator interface {
	Aggregator
	// AggregateMean updates global (one row per shared parameter) from means, the
	// round's weighted means of the trained values in the same order.
	AggregateMean(s *cuda.Scope, global, means []*cuda.Tensor) error
}
