package fl

// A Strategy says what its algorithm keeps personal; every other way it differs from FedAvg
// is a hook of the lifecycle (lifecycle.go), grouped by stage: a Strategy implements the
// stage interface of each stage where it differs (PrepareStage, TrainStage, GenerateStage,
// ServerStage, EvalStage) and returns that stage's hooks as a table whose nil fields take
// the default. New asks each stage once (hooksOf).

import (
	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/hyper"
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

// PrepareStage is a Strategy that shapes its run before the first round.
type PrepareStage interface {
	Strategy
	PrepareHooks() PrepareHooks
}

// PrepareHooks are a strategy's hooks before and when a run starts.
type PrepareHooks struct {
	// Shape returns the spec to build from the configured one, before anything is built
	// (FedPerfix: prefix adapters; TransFed: a FocalNet or an error): it adds the plug-in
	// the algorithm needs with its defaults when the spec has none, uses a spec that sets
	// it as given, and refuses a model that cannot take it. Nil: the configured spec.
	Shape func(s model.Spec) (model.Spec, error)
	// Wrap changes every model the run builds (FedRoD: a second, personal head; Ditto: a
	// personal copy beside the shared model, joined with model.Join): m was built for K
	// clients, and the wrapper owns it from here on. Nil: the built model.
	Wrap func(m model.Model, w Wrapping) (model.Model, error)
	// Bind shows the strategy its run before the first round, once (FedRoD: every client's
	// label counts; FedTP: the parameters its hypernetwork generates). A strategy that then
	// holds tensors implements io.Closer, and Run.Close closes it; it serves one run at a
	// time.
	Bind func(env Env) error
	// EveryClient makes every round train every client that can train, whatever the
	// configured clients per round (Local, as FedTP's official local training).
	EveryClient bool
	// ServerSample, with EveryClient, makes the server update read only a sample of the
	// clients that trained: the configured clients per round (Config.PerRound), drawn from
	// the round's sampling stream as every other algorithm's clients are (pFedMe's Alg. 1
	// and its authors' serverpFedMe.py). The other clients' trained personal rows are kept.
	ServerSample bool
}

// Wrapping is what PrepareHooks.Wrap is given beside the model.
type Wrapping struct {
	// Build makes more models like the wrapped one (Build(m.Params().K, Gen): Ditto's
	// personal copy).
	Build Builder
	// Gen is the generator the model drew from; nil when the model is declared only (for
	// accounting: Measure), and then nothing may be allocated.
	Gen *cuda.Generator
	// Classes is the number of classes of the run's labelled images (pFedGP-IP's inducing
	// inputs per class); 0 when unknown (text data, or accounting).
	Classes int
}

// TrainStage is a Strategy with its own local training (step 2 of the lifecycle).
type TrainStage interface {
	Strategy
	TrainHooks() TrainHooks
}

// TrainHooks are a strategy's hooks of local training, all working on the K clients of a
// stack at once.
type TrainHooks struct {
	// Phases splits the local training into phases (FedRep: the head, then the body); epochs
	// is the configured number of local epochs. Nil: one phase of epochs epochs over every
	// parameter.
	Phases func(epochs int) []Phase
	// Start changes the clients' prepared rows before their local training (pFedMe: each
	// personal model starts the round at the global model). It runs with grad disabled,
	// once per local training of a stack (once per client when clients train one at a time).
	Start func(s *cuda.Scope, m model.Model)
	// Loss is each client's local loss [K] on batch b, computed with model m and pass
	// (FedRoD: a balanced-softmax loss on the generic head plus a loss on the personal
	// head). Nil: MeanCrossEntropy of the model's forward.
	Loss func(s *cuda.Scope, m model.Model, b Batch, pass *model.Pass) *cuda.Tensor
	// Penalty is added to every step's loss: it returns the added loss for the stacked
	// parameters params (summed over clients), given the global values the round started
	// from (one row, broadcast). Nil: none.
	Penalty func(s *cuda.Scope, params, global []*cuda.Tensor) *cuda.Tensor
	// Optimizer is the local update rule of a phase (pFedMe's inner problem, a proximal
	// step, Adam), called once per (model, phase) of the run with the run's setting; phase
	// FineTunePhase is the fine-tuning before evaluation. Nil: NewSGD(run).
	Optimizer func(phase int, run SGDConfig) Optimizer
	// Step owns the whole training step instead of the default one (Per-FedAvg: a step on
	// two or three batches; pFedMe: K inner steps on one batch, then the outer step). The
	// run plans the epochs as usual and hands each step Batches consecutive batches of every
	// client's plan (a client whose plan ends inside a step gets idle batches, mask 0, for
	// the rest; a client is active in a step while its first batch is real). Step must leave
	// an inactive client's rows and optimizer state alone, as Optimizer.Step does, and read
	// only device values that change between steps (a captured step is replayed, see
	// runSteps). It returns each client's loss [K], which the round reports. Fine-tuning
	// before evaluation does not go through Step.
	Step func(s *cuda.Scope, in StepInput) *cuda.Tensor
	// Batches is how many batches one Step takes (at least 1); read only with Step.
	Batches int
	// HostStep says the training step reads device values on the host in the middle
	// (pFedGP: each client's GP is fitted on the host to the batch's features): a CUDA graph
	// cannot capture that, so its steps always run eagerly, and its Loss may read Go values
	// such as Batch.Clients.
	HostStep bool
	// Passes is how many forward and backward passes of the model a training sample costs,
	// for the resource table (APFL: its global and local models; Per-FedAvg HF: the
	// Hessian-vector product). 0: one.
	Passes float64
}

// GenerateStage is a Strategy whose server generates some of every client's parameters
// (FedTP: a hypernetwork generates the Q/K/V projections).
type GenerateStage interface {
	Strategy
	GenerateHooks() GenerateHooks
}

// GenerateHooks are a generating server's hooks. Generated parameters are neither averaged
// nor kept per client: each round, and for each evaluation, they are generated afresh,
// then trained locally as ordinary parameters. Generated, Generate, LearnSum and
// LearnApply are required.
type GenerateHooks struct {
	// Generated reports whether the server generates p. It is called once per parameter
	// when a run starts; a parameter cannot be both generated and personal.
	Generated func(p *model.Param) bool
	// Generate returns the generated parameters of the clients rows (int64 [K]), in the
	// model's parameter order, each [K, Shape...]. With grad enabled on s they carry the
	// graph that LearnSum differentiates.
	Generate func(s *cuda.Scope, rows *cuda.Tensor) []*cuda.Tensor
	// LearnSum is the round's clients' part of the server's update after local training:
	// one gradient tensor per server parameter, from generated as Generate returned them,
	// trained the clients' values after local training and weights [K] the clients' m_k/M
	// of the whole round. Across processes every rank calls it with all the round's
	// clients (their trained rows gathered), so every rank applies one process's update.
	LearnSum func(s *cuda.Scope, generated, trained []*cuda.Tensor, weights *cuda.Tensor) []*cuda.Tensor
	// LearnApply updates the server state with the summed gradient.
	LearnApply func(s *cuda.Scope, sum []*cuda.Tensor)
	// Tune returns the generator's parameters (not copies) that a novel client fine-tunes
	// in mode TuneEmbedding or TuneHypernetwork (FineTuneNovel). Nil: the study is refused.
	Tune func(mode string) ([]*cuda.Tensor, error)
	// Net is the hypernetwork, when the generator is one (Run.HyperNet: its client
	// embeddings are written with the run).
	Net func() *hyper.Net
	// ParamCount is how many parameters the generator would hold for a run of clients
	// clients on a model shaped as m, without building it (Measure).
	ParamCount func(m model.Model, clients int) float64
}

// ServerStage is a Strategy with its own server update of the shared parameters, or with
// server state.
type ServerStage interface {
	Strategy
	ServerHooks() ServerHooks
}

// ServerHooks are a strategy's hooks of the server update (step 3 of the lifecycle) and of
// its state across rounds.
type ServerHooks struct {
	// Weights are the server's weights of clients holding sizes training samples, in order,
	// summing to 1 (pFedGP: its official trainers average the clients uniformly); they
	// replace m_k/M everywhere the server update reads the clients' weights (Aggregate,
	// GenerateHooks.LearnSum). Nil: Weights.
	Weights func(sizes []int) []float64
	// Aggregate folds the round's clients' shared values into the global model (a server
	// optimizer, a robust mean): global are the global model's shared parameters (one row
	// each, updated in place), trained the round's clients' values [K, ...] in the same
	// order, weights [K] the clients' weights. Nil: AverageInto.
	Aggregate func(s *cuda.Scope, global, trained []*cuda.Tensor, weights *cuda.Tensor) error
	// AggregateMean is Aggregate for a server update that reads the trained values only
	// through their weighted mean Σ_k w_k θ_k (pFedMe: a step of β towards it), so that
	// across processes the mean is a sum of per-rank partial means, all-reduced, which every
	// rank then applies; Aggregate must equal AggregateMean with the mean. An Aggregate
	// without it is refused across processes.
	AggregateMean func(s *cuda.Scope, global, means []*cuda.Tensor) error
	// State is server state that lives across rounds (FedTP: φ, z and the optimizer's
	// momentum): checkpoints save these tensors and restore copies into them.
	State func() (names []string, tensors []*cuda.Tensor)
}

// EvalStage is a Strategy whose clients are evaluated otherwise than by their model's
// forward pass as prepared.
type EvalStage interface {
	Strategy
	EvalHooks() EvalHooks
}

// EvalHooks are a strategy's hooks of evaluation (step 4 of the lifecycle).
type EvalHooks struct {
	// FineTune fine-tunes each client's model on its own training data before it is
	// evaluated, without keeping the change (FedBABU: the head; Per-FedAvg: one adaptation
	// step). Its steps are the default step, never TrainHooks.Step, and its optimizer is
	// TrainHooks.Optimizer's for phase FineTunePhase. Nil: none.
	FineTune *Phase
	// Predict gives the logits [K, B, classes] for inputs x [K, B, ...] with m's rows
	// prepared for the clients (APFL's mixture, Ditto's personal model, a GP classifier).
	// Nil: the model's forward.
	Predict func(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor
	// Embed and Condition make the clients predict from their own training samples (pFedGP:
	// a GP classifier conditioned on the client's training features). Before a chunk's test
	// batches the evaluation embeds every training sample of the chunk's clients with Embed
	// (inputs x [K, B, ...] through m's rows to [K, B, D]; one pass in order, no
	// augmentation, evaluation mode, grad disabled) and hands them to Condition, which
	// prepares row k's predictor from client ids[k]'s samples (m's parameters it may read
	// too: pFedGP-IP's inducing inputs); Predict then serves the chunk's test batches (a
	// chunk is padded with repeats of its last client). Both or neither, and with Predict.
	Embed     func(s *cuda.Scope, m model.Model, x *cuda.Tensor) *cuda.Tensor
	Condition func(s *cuda.Scope, m model.Model, ids []int, train Embedded) error
	// KNN mixes a vote of each client's nearest training features into its prediction
	// (FedTP+KNN); K 0: off.
	KNN KNN
}

// Embedded is a chunk's clients' training samples as EvalHooks.Condition sees them: Feat
// [K, M, D] (what Embed returns, every training sample of the client in order, padded to
// the longest), labels Y and Mask [K, M] (1 for a real sample).
type Embedded struct{ Feat, Y, Mask *cuda.Tensor }

// Phase is part of a client's local training: Epochs epochs (at most Steps steps when
// Steps > 0) in which only the parameters Train selects are updated.
type Phase struct {
	Epochs int
	Steps  int
	Train  func(p *model.Param) bool
}

// FineTunePhase is the phase number of EvalHooks.FineTune: what TrainHooks.Optimizer is
// called with for it, and what numbers its batch-order streams.
const FineTunePhase = 1000

// AllParams selects every parameter (a Phase that trains the whole model).
func AllParams(*model.Param) bool { return true }

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

// Batch is one client-stacked training batch: X [K, B, ...], labels Y and mask [K, B]
// (1 for a real sample), and the clients of the stack rows, in Go and on the device.
type Batch struct {
	X, Y, Mask *cuda.Tensor
	Clients    []int
	Rows       *cuda.Tensor // int64 [K], the same ids as Clients
}

// Env is what PrepareHooks.Bind sees of its run.
type Env struct {
	Fed    *data.Federated
	Model  model.Model // the global model (one row): parameters, roles and shapes
	Device cuda.Device
	DType  cuda.DType
	Seed   uint64
	Batch  int // the local batch size
}

// StepInput is one local training step as TrainHooks.Step sees it.
type StepInput struct {
	Model   model.Model
	Batches []Batch        // TrainHooks.Batches consecutive batches of each client's plan
	Passes  []*model.Pass  // one per batch: the clients' dropout streams, the BatchNorm mask
	Params  []*cuda.Tensor // the phase's trained parameters of Model, in model order
	Global  []*cuda.Tensor // their global values (one row, broadcast), as TrainHooks.Penalty sees them
	Opt     Optimizer      // the phase's optimizer (TrainHooks.Optimizer's, else the run's SGD)
	Active  *cuda.Tensor   // [K] float32: 1 while the client's epochs last, else 0
	// Loss is each client's local loss [K] on batch b computed with m (Model or one of its
	// parts): TrainHooks.Loss when the strategy has one, else the mean cross-entropy.
	Loss func(s *cuda.Scope, m model.Model, b Batch, pass *model.Pass) *cuda.Tensor
}
