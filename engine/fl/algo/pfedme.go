package algo

import (
	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// PFedMeConfig is pFedMe's setting.
type PFedMeConfig struct {
	Lambda     float64 // λ, the personal models' pull towards the local model
	InnerSteps int     // K, the steps that approximately solve the personal problem per batch
	PersonalLR float64 // the personal learning rate of those steps
	Beta       float64 // β, the server's step: w ← (1 − β) w + β · mean of the clients' w
	// AllClients trains every client every round, and the server mixes in the configured
	// clients per round, a sample of them (the paper's Alg. 1 and its authors' code,
	// CharlieDinh/pFedMe serverpFedMe.py: "do update for all users not only selected
	// users", then select_users and persionalized_aggregate_parameters); false trains only
	// the round's sampled clients, as FedTP's code (local_train_net_pfedMe skips the others).
	AllClients bool
}

// PFedMeSettings are pFedMe's config keys, algorithm.pfedme (FedTP's official code's
// values).
type PFedMeSettings struct {
	// Lambda is λ in the personal problem f(θ) + λ/2‖θ − w‖²; default 15 (--pfedMe_lambda).
	Lambda float64 `mapstructure:"lambda" json:"lambda"`
	// InnerSteps is K, the personal steps per batch; default 5 (--pfedMe_k).
	InnerSteps int `mapstructure:"inner_steps" json:"inner_steps"`
	// PersonalLR is the personal steps' learning rate; default (unset) train.lr, as the
	// official code's pFedMeOptimizer takes --lr.
	PersonalLR *float64 `mapstructure:"personal_lr" json:"personal_lr"`
	// Beta is β in the server's w ← (1 − β) w + β · mean; default 1 (--pfedMe_beta, which
	// the official code's update leaves out, i.e. 1).
	Beta float64 `mapstructure:"beta" json:"beta"`
	// Clients is who trains each round: "sampled" (the round's sampled clients, as FedTP's
	// code runs its pFedMe baseline: FedTP's tables) or "all" (every client every round,
	// the server mixing in train.participation of them: the pFedMe paper's Alg. 1 and its
	// authors' code); default sampled.
	Clients string `mapstructure:"clients" json:"clients"`
}

// Default is FedTP's official setting; PersonalLR is left unset (train.lr).
func (PFedMeSettings) Default() PFedMeSettings {
	return PFedMeSettings{Lambda: 15, InnerSteps: 5, Beta: 1, Clients: "sampled"}
}

// Validate reports a value pFedMe cannot run with, naming its config key.
func (c PFedMeSettings) Validate() error {
	k := &check.Checker{}
	k.Real("algorithm.pfedme.lambda", c.Lambda, 0, check.Inf, "(]")
	k.AtLeast("algorithm.pfedme.inner_steps", int64(c.InnerSteps), 1)
	if c.PersonalLR != nil {
		k.Real("algorithm.pfedme.personal_lr", *c.PersonalLR, 0, check.Inf, "(]")
	}
	k.Real("algorithm.pfedme.beta", c.Beta, 0, check.Inf, "(]")
	k.OneOf("algorithm.pfedme.clients", c.Clients, "sampled", "all")
	return k.Err()
}

// WithLR makes an unset PersonalLR follow the run's learning rate lr (train.lr), as the
// official code's single --lr (FollowsLR).
func (c PFedMeSettings) WithLR(lr float64) fl.Section {
	if c.PersonalLR == nil {
		c.PersonalLR = &lr
	}
	return c
}

// config is the setting the algorithm runs with; an unset PersonalLR is 0 here (Settings.Resolve
// fills it with train.lr first).
func (c PFedMeSettings) config() PFedMeConfig {
	lr := 0.0
	if c.PersonalLR != nil {
		lr = *c.PersonalLR
	}
	return PFedMeConfig{Lambda: c.Lambda, InnerSteps: c.InnerSteps, PersonalLR: lr, Beta: c.Beta, AllClients: c.Clients == "all"}
}

// PFedMe is personalized FL with Moreau envelopes (Dinh, Tran and Nguyen, "Personalized
// Federated Learning with Moreau Envelopes", NeurIPS 2020, Alg. 1). Each client keeps a
// personal model θ beside its local copy w of the global model; on every batch D it first
// solves the personal problem approximately with K steps at the personal learning rate,
//
//	θ ← θ − personal_lr · (∇f(θ; D) + λ (θ − w))   (K times)
//
// and then moves w towards the result, w ← w − η λ (w − θ), η the run's learning rate.
// The server then mixes the clients' w into the global model (ServerHooks.Aggregate),
//
//	w_global ← (1 − β) w_global + β Σ_k (m_k/M) w_k,
//
// and each client predicts with its θ (EvalHooks.Predict). The model is model.Join(w, θ)
// (twin.go): θ is kept by its client for evaluation, and starts every round as a copy of
// the global model, buffers included (TrainHooks.Start), as FedTP's official code (zhyczy/FedTP,
// methods/method.py train_net_pfedMe: the personal network loads the global state, then
// runs K pFedMeOptimizer steps per batch and the local update above) and the authors'
// code do; it carries over from batch to batch within the round.
//
// Who trains. By default only the round's sampled clients train, as FedTP's code runs its
// pFedMe baseline (methods/method.py local_train_net_pfedMe skips the clients not in
// `selected`), which FedTP's tables report; the others keep their last θ. With AllClients
// every client trains every round and the server mixes in a sample of them, the paper's
// Alg. 1 and its authors' code, so that every client's θ is freshly personalized when it
// is evaluated (PrepareHooks.EveryClient and ServerSample).
//
// Deviations and choices:
//   - The server weights the clients by their sample counts, as FedTP's code and the
//     authors' persionalized_aggregate_parameters (user.train_samples / total_train); the
//     paper's Alg. 1 averages the sampled clients uniformly. FedTP's code leaves β out
//     (β = 1, its default).
//   - The authors' code evaluates after every client trained and before the server's
//     update; here (FedTP's protocol) after it. θ is personal and the server update does
//     not touch it, so the evaluated θ is the same.
//   - The outer update is a plain step at the run's learning rate, whatever train.momentum
//     and train.weight_decay say (Optimizer): FedTP's code moves w by hand,
//     w ← w − λ·lr·(w − θ) (methods/method.py train_net_pfedMe), as the authors' code
//     (FLAlgorithms/users/userpFedMe.py) and the paper's Alg. 1 line 8 do, while the run's
//     SGD settings belong to the other algorithms of a suite (FedTP's configs set momentum
//     0.9). The inner steps are plain too (pFedMeOptimizer with --pfedMe_mu 0).
//   - The reported training loss is f(θ; D) at the last inner step of each batch, as
//     FedTP's code logs it.
//   - With BatchNorm, θ's running statistics follow its K forward passes per batch; w is
//     never run, so the global model's statistics stay at their initial values (as in
//     FedTP's code, where only the parameters are averaged); θ starts each round from them.
type PFedMe struct {
	PFedMeConfig
	twins
}

// Name is "pfedme".
func (*PFedMe) Name() string { return "pfedme" }

// PrepareHooks join the personal model θ beside every model the run builds (Wrap); with
// AllClients every client trains every round, and the server update still reads only the
// configured clients per round (EveryClient, ServerSample).
func (p *PFedMe) PrepareHooks() fl.PrepareHooks {
	return fl.PrepareHooks{Wrap: p.wrap, EveryClient: p.AllClients, ServerSample: true}
}

// TrainHooks start θ at the global model (Start), take pFedMe's steps (Step, one batch
// each) on f(θ) (Loss) with a plain outer update (Optimizer); each inner step is a forward
// and backward pass (Passes).
func (p *PFedMe) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Start: p.Start, Loss: p.Loss, Optimizer: p.Optimizer, Step: p.Step, Batches: 1,
		Passes: float64(p.InnerSteps)}
}

// ServerHooks move the global model towards the clients' mean by β.
func (p *PFedMe) ServerHooks() fl.ServerHooks {
	return fl.ServerHooks{Aggregate: p.Aggregate, AggregateMean: p.AggregateMean}
}

// EvalHooks predict with the personal model θ.
func (p *PFedMe) EvalHooks() fl.EvalHooks { return fl.EvalHooks{Predict: p.predict} }

// Start copies the global model (the prepared w, buffers included) into θ.
func (p *PFedMe) Start(s *cuda.Scope, m model.Model) {
	w, theta := part(s, m, 0), part(s, m, 1)
	if w == nil {
		return
	}
	s.ForeachCopy(model.Tensors(theta.Params().List), model.Tensors(w.Params().List))
}

// Loss is f(θ), the personal model's mean cross-entropy over the client's real samples
// (the inner steps' loss, and what fine-tuning a novel client's θ minimizes).
func (p *PFedMe) Loss(s *cuda.Scope, m model.Model, b fl.Batch, pass *model.Pass) *cuda.Tensor {
	theta := part(s, m, 1)
	if theta == nil {
		return nil
	}
	return fl.MeanCrossEntropy(s, theta.Forward(s, b.X, pass), b.Y, b.Mask)
}

// Optimizer is a plain SGD at the run's learning rate, without the run's momentum and
// weight decay: Step moves w with it, w ← w − lr·λ(w − θ), the official
// codes' update by hand (see the type's comment).
func (*PFedMe) Optimizer(_ int, run fl.SGDConfig) fl.Optimizer {
	return fl.NewSGD(fl.SGDConfig{LR: run.LR})
}

// Step makes the K personal steps on the batch, then the local model's step.
func (p *PFedMe) Step(s *cuda.Scope, in fl.StepInput) *cuda.Tensor {
	w, theta := part(s, in.Model, 0), part(s, in.Model, 1)
	if w == nil {
		return nil
	}
	wT, thetaT := model.Tensors(w.Params().Trainable()), model.Tensors(theta.Params().Trainable())
	b, pass := in.Batches[0], in.Passes[0]
	var loss *cuda.Tensor
	grad := s.GradEnabled()
	defer s.SetGradEnabled(grad)
	for range p.InnerSteps {
		s.SetGradEnabled(true)
		loss = in.Loss(s, in.Model, b, pass) // f(θ): Loss

		g := s.Grad([]*cuda.Tensor{s.Sum(loss, false)}, nil, thetaT, cuda.GradOptions{AllowUnused: true})
		if s.Err() != nil {
			return loss
		}
		s.SetGradEnabled(false)
		g = fl.ZeroMissing(s, g, thetaT)
		d := make([]*cuda.Tensor, len(g))
		for i := range g {
			d[i] = s.AddScaled(g[i], s.Sub(thetaT[i], wT[i]), p.Lambda) // ∇f(θ) + λ(θ − w)
		}
		s.ForeachAddcmul(thetaT, d, fl.PerClient(s, thetaT, in.Active), -p.PersonalLR)
	}
	s.SetGradEnabled(false)
	pull := make([]*cuda.Tensor, len(wT))
	for i := range wT {
		pull[i] = s.MulScalar(s.Sub(wT[i], thetaT[i]), p.Lambda) // λ(w − θ)
	}
	in.Opt.Step(s, wT, pull, in.Active)
	return loss
}

// Aggregate is w_global ← (1 − β) w_global + β Σ_k weights_k w_k; with β = 1 exactly the
// FedAvg mean.
func (p *PFedMe) Aggregate(s *cuda.Scope, global, trained []*cuda.Tensor, weights *cuda.Tensor) error {
	if p.Beta == 1 || len(global) == 0 {
		return fl.AverageInto(s, global, trained, weights)
	}
	means := make([]*cuda.Tensor, len(global))
	for i, g := range global {
		means[i] = s.Clone(g)
	}
	s.ForeachWeightedSum(means, trained, weights)
	return p.AggregateMean(s, global, means)
}

// AggregateMean is Aggregate's update from the weighted mean Σ_k weights_k w_k
// (across processes the mean is all-reduced first).
func (p *PFedMe) AggregateMean(s *cuda.Scope, global, means []*cuda.Tensor) error {
	if p.Beta == 1 {
		s.ForeachCopy(global, means)
	} else {
		s.ForeachLerp(global, means, p.Beta)
	}
	return s.Err()
}
