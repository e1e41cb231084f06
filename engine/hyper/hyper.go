// Package hyper is FedTP's server-side hypernetwork (Li et al., "FedTP: Federated Learning
// by Transformer Personalization", §III-B, Algorithm 1): a learnable embedding z_i per
// client, an MLP trunk, and one linear head per generated parameter, so that h(φ; z_i)
// gives client i's weights for those parameters. It also implements the server update of
// Algorithm 1 (line 12): φ ← φ − β Σ_i (m_i/M) (∂W_i/∂φ)ᵀ ΔW_i, computed as one
// vector-Jacobian product for all of a round's clients.
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
}

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

// Target is one generated parameter: its name (for checkpoints) and one client's shape.
type Target struct {
	Name  string
	Shape []int64
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Net is the hypernetwork: its parameters φ (trunk and heads) and z (embeddings), and the
// SGD momentum buffers that persist across rounds.
type Net struct {
	Cfg     Config
	Targets []Target

	names  []string
	params []*cuda.Tensor // z, then trunk weight/bias pairs, then head weight/bias pairs
	bufs   []*cuda.Tensor // momentum buffers, zero until the first step
}

// New builds the hypernetwork generating targets, on dev in dt, with PyTorch's default
// initialization drawn from gen: N(0, 1) embeddings (nn.Embedding), U(±1/√fan_in) weights
// and biases (nn.Linear).
func New(cfg Config, targets []Target, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*Net, error) {
	cfg.defaults()
	if cfg.Clients < 1 || cfg.Embed < 1 || cfg.Hidden < 1 || cfg.Layers < 1 || !(cfg.LR > 0) || cfg.Momentum >= 1 {
		return nil, fmt.Errorf("hyper: clients %d, embedding %d, hidden %d, layers %d must be >= 1, lr %g > 0, momentum %g < 1",
			cfg.Clients, cfg.Embed, cfg.Hidden, cfg.Layers, cfg.LR, cfg.Momentum)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("hyper: nothing to generate")
	}
	n := &Net{Cfg: cfg, Targets: targets}
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
	for _, t := range targets {
		add("heads."+t.Name+".weight", 0, b, numel(t.Shape), cfg.Hidden)
		add("heads."+t.Name+".bias", 0, b, numel(t.Shape))
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
// [K, Shape...]: one batched pass of the trunk and each head. With grad enabled on s the
// outputs carry the graph that Update differentiates.
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
	at := 1 + 2*n.Cfg.Layers
	for i, t := range n.Targets {
		w := s.Linear(h, n.params[at+2*i], n.params[at+2*i+1])
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

// Step is torch.optim.SGD on every parameter with the given gradients: d = g + λφ;
// buf ← μ·buf + d; φ ← φ − β·buf. As in FedTP's code, weight decay and momentum act on
// every embedding row, also those of clients not in the round.
func (n *Net) Step(s *cuda.Scope, grads []*cuda.Tensor) {
	if len(grads) != len(n.params) {
		s.Fail(fmt.Errorf("hyper: %d gradients for %d parameters", len(grads), len(n.params)))
		return
	}
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	c := n.Cfg
	for i, p := range n.params {
		d := grads[i]
		if c.WeightDecay != 0 {
			d = s.AddScaled(d, p, c.WeightDecay)
		}
		if c.Momentum != 0 {
			s.CopyFrom(n.bufs[i], s.AddScaled(d, n.bufs[i], c.Momentum))
			d = n.bufs[i]
		}
		s.CopyFrom(p, s.AddScaled(p, d, -c.LR))
	}
}
