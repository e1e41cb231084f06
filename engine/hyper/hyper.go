// Package hyper is FedTP's server-side hypernetwork (Li et al., "FedTP: Federated Learning
// by Transformer Personalization", §III-B, Algorithm 1), which TransFed (Ashraf et al.,
// WACV 2024, §3.3) reuses for focal modulation and pFedHN (Shamsian et al., ICML 2021,
// Algorithm 1) for every weight of the target network: a learnable embedding z_i per client, an
// MLP trunk, and one linear head per generated parameter, so that h(φ; z_i) gives client
// i's weights for those parameters. It also implements the server update of Algorithm 1
// (line 12): φ ← φ − β Σ_i (m_i/M) (∂W_i/∂φ)ᵀ ΔW_i, computed as one vector-Jacobian
// product for all of a round's clients.
//
// Config.Rank > 0 replaces each matrix's head by low-rank heads (pfl's extension for
// backbones whose full heads would not fit; see Config.Rank).
package hyper

import (
	"fmt"
	"math"

	"pfl/cuda"
	"pfl/engine/internal/defaults"
)

// Config sizes the hypernetwork and its optimizer. Zero values take the defaults of
// FedTP's official code (models/Hypernetworks.py ViTHyper, main.py).
type Config struct {
	Clients int   // N: one embedding row per client (required)
	Embed   int64 // client-embedding width; default 128 (the paper's novel-client study: 32)
	Hidden  int64 // trunk width; default 150
	Layers  int   // trunk linear layers, ReLU between them and none after the last; default 4

	LR          float64 // β; default 0.01
	Momentum    float64 // default 0.9; negative: none
	WeightDecay float64 // default 1e-3; negative: none
	// Clip, when > 0, scales each step's gradients so that their total L2 norm (over every
	// parameter, embeddings included) is at most Clip, as torch.nn.utils.clip_grad_norm_
	// (pFedHN's official code clips at 50); default 0: no clipping (FedTP's code).
	Clip float64

	// Rank chooses the heads of every target with two or more dims, viewed as a matrix
	// W [out, in] (out = its first dim, in = the product of the rest). 0 (the default, and
	// FedTP's): one full head, Linear(hidden → out·in). r > 0: low-rank heads, pfl's
	// extension (TransFed's authors name "low-rank hypernetwork conditioning" without
	// defining it): two heads give U [out, r'] and V [r', in] from the trunk's output, with
	// r' = min(r, out, in), and W = W0 + U V, where W0 [out, in] is a learned base shared
	// by every client. W0 keeps the generated matrix full-rank (U V alone would cap every
	// client's W at rank r'); it plays the part of a full head's bias and is initialized
	// as one, U(±1/√hidden), and the server update moves it by Σ_i (m_i/M) ΔW_i, the
	// weighted mean of the clients' changes. Targets with one dim (biases) keep full heads.
	// RankAuto chooses by size (AutoRank).
	Rank int64
}

// RankAuto as Config.Rank chooses the heads by their size: full heads while they would
// hold at most AutoFullHeads parameters, else rank AutoRank. pfl's choice, so that a
// FocalNet-T's generated projections fit one GPU with room: its focal_f alone would need
// 655 M full-head parameters, 2.6 GB in float32 and as much again for the momentum,
// while the 32×32 FocalNet's 40 M keep their full heads.
const (
	RankAuto      = -1
	AutoFullHeads = 1 << 28 // 268,435,456 parameters: 1 GiB in float32
	AutoRank      = 32
)

func (c *Config) defaults() {
	defaults.Set(&c.Embed, 128)
	defaults.Set(&c.Hidden, 150)
	defaults.Set(&c.Layers, 4)
	defaults.Set(&c.LR, 0.01)
	defaults.Set(&c.Momentum, 0.9)
	defaults.Set(&c.WeightDecay, 1e-3)
	c.Momentum = math.Max(c.Momentum, 0)
	c.WeightDecay = math.Max(c.WeightDecay, 0)
}

// resolved is c with its defaults and, for RankAuto, the rank chosen for targets.
func (c Config) resolved(targets []Target) Config {
	c.defaults()
	if c.Rank == RankAuto {
		c.Rank = 0
		if full := c.headParams(targets); full > AutoFullHeads {
			c.Rank = AutoRank
		}
	}
	return c
}

// head is where one target's head parameters sit in Net.params, and its factor sizes
// (r = 0: a full head).
type head struct {
	at         int
	out, in, r int64
}

// heads lays out the targets' heads (after the embeddings and the trunk) for c's rank.
func (c Config) heads(targets []Target) []head {
	at := 1 + 2*c.Layers
	out := make([]head, len(targets))
	for i, t := range targets {
		h := head{at: at}
		if c.Rank > 0 && len(t.Shape) >= 2 {
			h.out, h.in = t.Shape[0], numel(t.Shape)/t.Shape[0]
			h.r = min(c.Rank, h.out, h.in)
			at += 5 // u.weight, u.bias, v.weight, v.bias, base
		} else {
			at += 2 // weight, bias
		}
		out[i] = h
	}
	return out
}

// headParams is the number of parameters of the targets' heads under c's rank, counted
// in float64 so that absurd sizes cannot overflow.
func (c Config) headParams(targets []Target) float64 {
	var n float64
	hidden := float64(c.Hidden)
	for i, h := range c.heads(targets) {
		if h.r == 0 {
			n += (hidden + 1) * float64(numel(targets[i].Shape))
		} else {
			out, in, r := float64(h.out), float64(h.in), float64(h.r)
			n += (hidden+1)*(out*r+r*in) + out*in
		}
	}
	return n
}

// ParamCount is the number of parameters New would allocate for cfg and targets
// (embeddings, trunk and heads), without allocating them; the optimizer holds as many
// again in momentum buffers. It counts in float64, so that absurd sizes (a memory check's
// input) cannot overflow.
func ParamCount(cfg Config, targets []Target) float64 {
	c := cfg.resolved(targets)
	hidden := float64(c.Hidden)
	n := float64(c.Clients)*float64(c.Embed) + c.headParams(targets) + (float64(c.Embed)+1)*hidden
	if c.Layers > 1 {
		n += float64(c.Layers-1) * (hidden + 1) * hidden
	}
	return n
}

// Target is one generated parameter: its name (for checkpoints), one client's shape and
// a constant added to the head's output.
type Target struct {
	Name  string
	Shape []int64
	// Offset is added to every generated value, so that a fresh hypernetwork generates
	// values around it rather than around 0: 1 for normalization scales (a scale near 0
	// switches the layer off), 0 for everything else. The gradient is unchanged.
	Offset float64
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Net is the hypernetwork: its parameters φ (trunk and heads) and z (embeddings), and the
// SGD momentum buffers that persist across rounds. Cfg holds the defaults and the rank New
// resolved.
type Net struct {
	Cfg     Config
	Targets []Target

	names  []string
	params []*cuda.Tensor // z, then trunk weight/bias pairs, then each target's head parameters
	bufs   []*cuda.Tensor // momentum buffers, zero until the first step
	heads  []head
}

// New builds the hypernetwork generating targets, on dev in dt, with PyTorch's default
// initialization drawn from gen: N(0, 1) embeddings (nn.Embedding), U(±1/√fan_in) weights
// and biases (nn.Linear). A full head is heads.<name>.weight and .bias; a low-rank head
// is heads.<name>.u.weight, .u.bias, .v.weight, .v.bias and .base, drawn in that order.
func New(cfg Config, targets []Target, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*Net, error) {
	if cfg.Rank < RankAuto {
		return nil, fmt.Errorf("hyper: rank %d; want 0 (full heads), a rank >= 1 or RankAuto", cfg.Rank)
	}
	cfg = cfg.resolved(targets)
	if cfg.Clients < 1 || cfg.Embed < 1 || cfg.Hidden < 1 || cfg.Layers < 1 || !(cfg.LR > 0) || cfg.Momentum >= 1 || !(cfg.Clip >= 0) {
		return nil, fmt.Errorf("hyper: clients %d, embedding %d, hidden %d, layers %d must be >= 1, lr %g > 0, momentum %g < 1, clip %g >= 0",
			cfg.Clients, cfg.Embed, cfg.Hidden, cfg.Layers, cfg.LR, cfg.Momentum, cfg.Clip)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("hyper: nothing to generate")
	}
	n := &Net{Cfg: cfg, Targets: targets, heads: cfg.heads(targets)}
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	add := func(name string, std, bound float64, shape ...int64) {
		t := s.Zeros(dt, dev, shape...)
		if std > 0 {
			s.FillNormal(gen, t, 0, std)
		} else {
			s.FillUniform(gen, t, -bound, bound)
		}
		s.Keep(t)
		n.names = append(n.names, name)
		n.params = append(n.params, t)
	}
	add("embeddings", 1, 0, int64(cfg.Clients), cfg.Embed)
	in := cfg.Embed
	for l := 0; l < cfg.Layers; l++ {
		b := 1 / math.Sqrt(float64(in))
		add(fmt.Sprintf("mlp.%d.weight", l), 0, b, cfg.Hidden, in)
		add(fmt.Sprintf("mlp.%d.bias", l), 0, b, cfg.Hidden)
		in = cfg.Hidden
	}
	b := 1 / math.Sqrt(float64(cfg.Hidden))
	for i, t := range targets {
		p := "heads." + t.Name
		if h := n.heads[i]; h.r > 0 {
			add(p+".u.weight", 0, b, h.out*h.r, cfg.Hidden)
			add(p+".u.bias", 0, b, h.out*h.r)
			add(p+".v.weight", 0, b, h.r*h.in, cfg.Hidden)
			add(p+".v.bias", 0, b, h.r*h.in)
			add(p+".base", 0, b, h.out, h.in)
			continue
		}
		add(p+".weight", 0, b, numel(t.Shape), cfg.Hidden)
		add(p+".bias", 0, b, numel(t.Shape))
	}
	for _, p := range n.params {
		n.bufs = append(n.bufs, s.Zeros(dt, dev, p.Shape()...))
		s.Keep(n.bufs[len(n.bufs)-1])
	}
	if err := s.Err(); err != nil {
		n.Close()
		return nil, fmt.Errorf("hyper: %w", err)
	}
	for _, p := range n.params {
		if err := p.SetRequiresGrad(true); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// Close frees the parameters and buffers.
func (n *Net) Close() error {
	for _, t := range append(n.params, n.bufs...) {
		t.Close()
	}
	n.params, n.bufs = nil, nil
	return nil
}

// Params are z and φ, in a fixed order; Names names them.
func (n *Net) Params() []*cuda.Tensor { return n.params }

// Names are the parameters' names, as checkpoints store them.
func (n *Net) Names() []string { return n.names }

// Buffers are the optimizer's momentum buffers, in the order of Params.
func (n *Net) Buffers() []*cuda.Tensor { return n.bufs }

// Count is the number of hypernetwork parameters (embeddings included).
func (n *Net) Count() int64 {
	var c int64
	for _, p := range n.params {
		c += p.Numel()
	}
	return c
}

// Generate returns, for the clients rows (int64 [K] on the device), every target's weights
// [K, Shape...]: one batched pass of the trunk and each head (a low-rank head: W0 + U V,
// one batched matrix product for the K clients). With grad enabled on s the outputs carry
// the graph that Gradient differentiates.
func (n *Net) Generate(s *cuda.Scope, rows *cuda.Tensor) []*cuda.Tensor {
	k := rows.Size(0)
	h := s.IndexSelect(n.params[0], 0, rows) // [K, Embed]
	for l := 0; l < n.Cfg.Layers; l++ {
		if l > 0 {
			h = s.ReLU(h)
		}
		h = s.Linear(h, n.params[1+2*l], n.params[2+2*l])
	}
	out := make([]*cuda.Tensor, len(n.Targets))
	for i, t := range n.Targets {
		hd, p := n.heads[i], n.params[n.heads[i].at:]
		var w *cuda.Tensor
		if hd.r == 0 {
			w = s.Linear(h, p[0], p[1])
		} else {
			u := s.Reshape(s.Linear(h, p[0], p[1]), k, hd.out, hd.r)
			v := s.Reshape(s.Linear(h, p[2], p[3]), k, hd.r, hd.in)
			w = s.BAddBMM(p[4], u, v, 1, 1) // W0 + U V, [K, out, in]
		}
		if t.Offset != 0 {
			w = s.AddScalar(w, t.Offset)
		}
		out[i] = s.Reshape(w, append([]int64{k}, t.Shape...)...)
	}
	return out
}

// Gradient is Algorithm 1's server gradient Σ_i w_i (∂W_i/∂φ)ᵀ ΔW_i for every parameter
// (embeddings included; rows of clients not in the round get zero): generated are
// Generate's outputs (with their graph), delta the matching ΔW_i = W_i⁰ − W_iᴱ [K, ...],
// weights [K] the clients' m_i/M. One vector-Jacobian product for all K clients.
func (n *Net) Gradient(s *cuda.Scope, generated, delta []*cuda.Tensor, weights *cuda.Tensor) []*cuda.Tensor {
	if len(generated) != len(n.Targets) || len(delta) != len(n.Targets) {
		s.Fail(fmt.Errorf("hyper: %d generated and %d deltas for %d targets", len(generated), len(delta), len(n.Targets)))
		return nil
	}
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	outs := make([]*cuda.Tensor, len(delta))
	for i, d := range delta {
		shape := make([]int64, d.Dim())
		for j := range shape {
			shape[j] = 1
		}
		shape[0] = -1
		outs[i] = s.Mul(d, s.Reshape(s.To(weights, d.DType()), shape...))
	}
	s.SetGradEnabled(grad)
	g := s.Grad(generated, outs, n.params, cuda.GradOptions{AllowUnused: true})
	for i, t := range g {
		if t == nil && s.Err() == nil {
			g[i] = s.Zeros(n.params[i].DType(), n.params[i].Device(), n.params[i].Shape()...)
		}
	}
	return g
}

// Step is torch.optim.SGD on every parameter with the given gradients (overwritten): d = g + λφ;
// buf ← μ·buf + d; φ ← φ − β·buf. As in FedTP's code, weight decay and momentum act on
// every embedding row, also those of clients not in the round. With Cfg.Clip > 0 the
// gradients are first scaled by min(1, Clip/(‖g‖ + 1e-6)), ‖g‖ their total L2 norm, as
// torch.nn.utils.clip_grad_norm_ before the step in pFedHN's code.
func (n *Net) Step(s *cuda.Scope, grads []*cuda.Tensor) {
	if len(grads) != len(n.params) {
		s.Fail(fmt.Errorf("hyper: %d gradients for %d parameters", len(grads), len(n.params)))
		return
	}
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	c := n.Cfg
	var coef *cuda.Tensor // [1]: the clipping factor, nil without clipping
	if c.Clip > 0 {
		var sq *cuda.Tensor
		for _, g := range grads {
			t := s.Sum(s.Reshape(s.Mul(g, g), 1, -1), false, 1)
			if sq == nil {
				sq = t
			} else {
				sq = s.Add(sq, t)
			}
		}
		coef = s.Clamp(s.Div(s.Full(c.Clip, sq.DType(), sq.Device(), 1), s.AddScalar(s.Sqrt(sq), 1e-6)), math.Inf(-1), 1)
	}
	// In place, on the gradients (the caller's, consumed here): the head gradients are
	// hidden × every generated parameter each, and out-of-place temporaries held by the
	// caller's scope until the round ends were three more copies of the hypernetwork. Each
	// foreach update is the same elementwise a + α·b as the out-of-place add, so the result
	// is unchanged to the bit.
	if coef != nil {
		for _, g := range grads {
			s.ForeachMul([]*cuda.Tensor{g}, []*cuda.Tensor{coef})
		}
	}
	if c.WeightDecay != 0 {
		s.ForeachAdd(grads, n.params, c.WeightDecay)
	}
	d := grads
	if c.Momentum != 0 {
		s.ForeachAdd(grads, n.bufs, c.Momentum)
		for i, b := range n.bufs {
			s.CopyFrom(b, grads[i])
		}
		d = n.bufs
	}
	s.ForeachAdd(n.params, d, -c.LR)
}
