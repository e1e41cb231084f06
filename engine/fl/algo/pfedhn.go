package algo

import (
	"fmt"
	"math"
	"slices"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/hyper"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// PFedHNConfig is pFedHN's local training and clipping, the config's algorithm.pfedhn (the
// official code's values, AvivSham/pFedHN experiments/pfedhn/trainer.py; its hypernetwork is
// algorithm.hyper).
type PFedHNConfig struct {
	// InnerSteps is K, the local SGD steps of every client per round, whatever its data
	// size (train.epochs is not read); default 50 (--inner-steps, the paper's K). 0 trains
	// train.epochs epochs instead, as FedTP's pFedHN baseline.
	InnerSteps int `mapstructure:"inner_steps" json:"inner_steps"`
	// Clip bounds the L2 norm of each client's gradient at every local step and of the
	// hypernetwork's update gradient (torch.nn.utils.clip_grad_norm_ at both places in the
	// official code); default 50; 0: no clipping (FedTP's pFedHN baseline).
	Clip float64 `mapstructure:"clip" json:"clip"`
}

// Default is the official code's setting.
func (PFedHNConfig) Default() PFedHNConfig { return PFedHNConfig{InnerSteps: 50, Clip: 50} }

// Validate reports a value pFedHN cannot run with, naming its config key.
func (c PFedHNConfig) Validate() error {
	k := &check.Checker{}
	k.AtLeast("algorithm.pfedhn.inner_steps", int64(c.InnerSteps), 0)
	k.Real("algorithm.pfedhn.clip", c.Clip, 0, check.Inf, "[]")
	return k.Err()
}

// checkPFedHN is pfedhn's check across keys (its registry entry): it generates every
// trainable parameter, so algorithm.generate has nothing to choose.
func checkPFedHN(s fl.Settings, _ fl.Section, _ int) error {
	if s.Generate != nil {
		return fmt.Errorf("algorithm.generate: set, but algorithm pfedhn generates every trainable parameter; remove it")
	}
	return nil
}

// PFedHN is pFedHN (Shamsian, Navon, Fetaya and Chechik, "Personalized Federated Learning
// using Hypernetworks", ICML 2021, §3, Algorithm 1): a hypernetwork on the server generates
// every weight of each client's model from the client's embedding, θ_i = h(v_i; φ), for
// the objective min_{φ, v_1..v_n} Σ_i L_i(h(v_i; φ)). Each round the sampled client takes
// K local SGD steps from θ_i to θ̃_i and returns Δθ_i; the server descends along
// (∇_φ θ_i)ᵀ Δθ_i, for φ and v_i alike, the chain rule ∇_φ L_i = (∇_φ θ_i)ᵀ ∇_θ L_i with the
// gradient replaced by the local change. It is FedTP's machinery (engine/hyper, FedTP)
// with every trainable parameter generated, so nothing is averaged: with several clients
// a round, the update is one vector-Jacobian product of Σ_i (m_i/M) J_iᵀ (θ_i⁰ − θ_iᴷ),
// the official code's sign (θ_i⁰ − θ_iᴷ, descended), and for one client (the paper's
// setting, train.participation = 1/N) exactly Algorithm 1's step.
//
// Sizes and defaults, with their source (AvivSham/pFedHN, experiments/pfedhn/trainer.py):
//   - The hypernetwork: client embeddings 1 + ⌊N/4⌋ wide (--embed-dim -1, "auto"; N the
//     clients), a trunk of 4 Linear layers 100 wide with ReLUs between them (--hyper-hid
//     100, --n-hidden 3: one input layer and three hidden ones), one Linear head per
//     weight tensor (CNNHyper), PyTorch's default initialization.
//     algorithm.hyper.embed, .hidden and .layers change them.
//   - The server optimizer: SGD at lr 1e-2, momentum 0.9, weight decay 1e-3 (--optim sgd,
//     the default; --lr, --wd), after clipping the update gradient's norm at 50. pfl takes
//     β from algorithm.hyper.lr (default train.lr) and the rest from algorithm.hyper.*
//     (FedTP's defaults are the same 0.9 and 1e-3).
//   - Local training: K = 50 steps of batch 64 per round (--inner-steps, --batch-size) by
//     SGD at lr 5e-3, momentum 0.9, weight decay 5e-5 (--inner-lr, --inner-wd: train.lr,
//     train.momentum, train.weight_decay in pfl's configs), each step's gradient norm
//     clipped at 50. Phases expresses "K steps" as a phase of as many epochs as the
//     smallest client needs for K batches, cut at K steps (Phase.Steps), so every client of
//     a round takes exactly K steps.
//
// Deviations and choices:
//   - Batches. The official code draws each step's batch from a fresh shuffle of the
//     client's data (next(iter(loader))); pfl's K steps walk through shuffled epochs, each
//     sample once per epoch, an epoch's last batch possibly smaller.
//   - Clients per round. Algorithm 1 and the official code sample one client per round
//     (--num-steps 5,000); pfl samples train.participation × N clients per round without
//     replacement and weights their changes by m_i/M, as FedTP's pFedHN baseline
//     (zhyczy/FedTP main.py, alg pFedHN: 10% of the clients, 5 local epochs, no clipping,
//     128-d embeddings, a 150-wide trunk: inner_steps 0, clip 0 and algorithm.hyper.*
//     reproduce it). Stacked clients equal clients trained one at a time, so a round of
//     several clients sums their steps of Algorithm 1, each taken from the same φ, with
//     weights m_i/M.
//   - The embeddings take the hypernetwork's learning rate (the official --embed-lr
//     defaults to it); SGD only (no --optim adam); no spectral normalization (off by
//     default there); no pFedHN-PC (the paper's variant with a personal classifier).
//   - Buffers (BatchNorm's running statistics) are not generated: each client keeps its
//     own, as FedBN does, since they describe that client's generated weights. A client
//     that never trained, a novel one included, evaluates with the initial statistics
//     until its own training or fine-tuning moves them. The official CNN has no BatchNorm.
//   - Head sizes. Full heads, Linear(hidden → numel), while they hold at most 2^28
//     parameters, else low-rank heads of rank 32, W = W0 + U V (hyper.RankAuto, pfl's
//     extension; algorithm.hyper.rank sets the rank, 0 full heads): generating every
//     weight of a transformer multiplies its size by the trunk's width.
//   - Evaluation generates every client's model and evaluates it as generated, as the
//     official evaluate(); the official code reports the test accuracy at the step of the
//     best validation accuracy, pfl its tail and final evaluations.
//
// The novel-client study tunes the embedding or the whole hypernetwork, as FedTP's.
type PFedHN struct {
	FedTP
	PFedHNConfig
	epochs int // the epochs a plan needs for every client to take InnerSteps steps (Bind)
}

// pFedHNHidden is the official trunk width (--hyper-hid).
const pFedHNHidden = 100

// PFedHNEmbed is the official code's automatic embedding width for n clients,
// int(1 + n/4).
func PFedHNEmbed(n int) int64 { return int64(1 + n/4) }

// pFedHN is the registry's pFedHN: algorithm.hyper's sizes (unset: the official trunk
// width, the automatic embedding width), the rank RankAuto unless set, and
// algorithm.pfedhn's steps and clip.
func pFedHN(o fl.Options) *PFedHN {
	p := &PFedHN{FedTP: FedTP{All: true, Hyper: o.Hyper}, PFedHNConfig: ownOf[PFedHNConfig](o)}
	if p.Hyper.Hidden == 0 {
		p.Hyper.Hidden = pFedHNHidden
	}
	switch {
	case o.Rank != nil:
		p.Hyper.Rank = *o.Rank
	case p.Hyper.Rank == 0:
		p.Hyper.Rank = hyper.RankAuto
	}
	p.Hyper.Clip = p.Clip
	return p
}

// Name is "pfedhn".
func (p *PFedHN) Name() string { return "pfedhn" }

// Personal is true for buffers (BatchNorm's statistics): everything else is generated.
func (p *PFedHN) Personal(q *model.Param) bool { return q.Buffer }

// PrepareHooks are FedTP's with pFedHN's Bind.
func (p *PFedHN) PrepareHooks() fl.PrepareHooks {
	h := p.FedTP.PrepareHooks()
	h.Bind = p.Bind
	return h
}

// TrainHooks train InnerSteps steps (Phases) with clipped gradients (Optimizer).
func (p *PFedHN) TrainHooks() fl.TrainHooks {
	return fl.TrainHooks{Phases: p.Phases, Optimizer: p.Optimizer}
}

// GenerateHooks are FedTP's, counted with pFedHN's sizes.
func (p *PFedHN) GenerateHooks() fl.GenerateHooks {
	h := p.FedTP.GenerateHooks()
	h.ParamCount = p.HyperParams
	return h
}

// hyperFor is the hypernetwork's configuration for a run of clients clients: the automatic
// embedding width when none is set.
func (p *PFedHN) hyperFor(clients int) hyper.Config {
	c := p.Hyper
	if c.Embed == 0 {
		c.Embed = PFedHNEmbed(clients)
	}
	c.Clients = clients
	return c
}

// HyperParams is FedTP's count with pFedHN's sizes.
func (p *PFedHN) HyperParams(m model.Model, clients int) float64 {
	return hyper.ParamCount(p.hyperFor(clients), p.targets(m))
}

// Bind works out the epochs that give every trainable client InnerSteps batches, then
// builds the hypernetwork as FedTP does, with pFedHN's sizes.
func (p *PFedHN) Bind(env fl.Env) error {
	if err := p.PFedHNConfig.Validate(); err != nil {
		return err
	}
	if p.InnerSteps > 0 {
		if env.Batch < 1 {
			return fmt.Errorf("batch size %d, want >= 1", env.Batch)
		}
		least := 0 // the fewest batches an epoch gives a trainable client
		for c, part := range env.Fed.Part.Train {
			if len(part) == 0 || slices.Contains(env.Fed.Part.Novel, c) {
				continue
			}
			if n := (len(part) + env.Batch - 1) / env.Batch; least == 0 || n < least {
				least = n
			}
		}
		if least == 0 {
			return fmt.Errorf("no client has training samples")
		}
		p.epochs = (p.InnerSteps + least - 1) / least
	}
	configured := p.Hyper
	defer func() { p.Hyper = configured }()
	p.Hyper = p.hyperFor(len(env.Fed.Part.Train))
	return p.FedTP.Bind(env)
}

// Phases is one phase over every parameter: InnerSteps steps when set, else the run's
// epochs.
func (p *PFedHN) Phases(epochs int) []fl.Phase {
	if p.InnerSteps > 0 {
		return []fl.Phase{{Epochs: max(p.epochs, 1), Steps: p.InnerSteps, Train: fl.AllParams}}
	}
	return []fl.Phase{{Epochs: epochs, Train: fl.AllParams}}
}

// Optimizer is the run's SGD, after clipping each client's gradient norm at Clip when set.
func (p *PFedHN) Optimizer(phase int, c fl.SGDConfig) fl.Optimizer {
	if p.Clip > 0 {
		return &normClipped{max: p.Clip, Optimizer: fl.NewSGD(c)}
	}
	return fl.NewSGD(c)
}

// normClipped is an Optimizer that first scales each client's gradients so that their L2
// norm over all the step's parameters is at most max: torch.nn.utils.clip_grad_norm_ on
// every client's model, coefficient min(1, max/(‖g_k‖ + 1e-6)).
type normClipped struct {
	max float64
	fl.Optimizer
}

// Step clips each client's gradients, then steps the wrapped optimizer. It reads only
// device values, so a captured step replays it.
func (c *normClipped) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	var sq *cuda.Tensor // [K]: each client's squared gradient norm
	for _, g := range grads {
		t := s.Sum(s.Reshape(s.Mul(g, g), g.Size(0), -1), false, 1)
		if sq == nil {
			sq = t
		} else {
			sq = s.Add(sq, t)
		}
	}
	coef := s.Clamp(s.Div(s.Full(c.max, sq.DType(), sq.Device(), 1), s.AddScalar(s.Sqrt(sq), 1e-6)), math.Inf(-1), 1)
	scaled := make([]*cuda.Tensor, len(grads))
	for i, g := range grads {
		shape := make([]int64, g.Dim())
		for j := range shape {
			shape[j] = 1
		}
		shape[0] = -1
		scaled[i] = s.Mul(g, s.Reshape(s.To(coef, g.DType()), shape...))
	}
	s.SetGradEnabled(grad)
	c.Optimizer.Step(s, params, scaled, active)
}
