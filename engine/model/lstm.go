package model

import (
	"fmt"

	"pfl/cuda"
)

// LSTMConfig is the NextCharacterLSTM baseline of FedTP and LEAF for Shakespeare:
// embedding 8 → LSTM of 2 layers × 256 → linear decoder to the vocabulary.
type LSTMConfig struct {
	Vocab, Embed, Hidden, Layers int64
	SeqLen                       int64 // sequence length the MACs are counted for
}

// LSTM returns the reference sizes (vocabulary 100, sequences of 80).
func LSTM() LSTMConfig { return LSTMConfig{Vocab: 100, Embed: 8, Hidden: 256, Layers: 2, SeqLen: 80} }

// Validate reports a configuration that cannot be built.
func (c LSTMConfig) Validate() error {
	if c.Vocab <= 0 || c.Embed <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.SeqLen <= 0 {
		return fmt.Errorf("lstm: sizes must be positive: %+v", c)
	}
	return nil
}

// LSTMModel is the client-stacked LSTM.
type LSTMModel struct {
	Cfg LSTMConfig
	base
	emb    *Param
	layers [][4]*Param // weight_ih, weight_hh, bias_ih, bias_hh (PyTorch's names and gate order i, f, g, o)
	decW   *Param
	decB   *Param
}

// NewLSTM builds the LSTM for k clients.
func NewLSTM(name string, c LSTMConfig, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*LSTMModel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &LSTMModel{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	m.emb = ps.add("encoder.weight", RoleEmbedding, -1, InitNormal, 0, 0, c.Vocab, c.Embed)
	// nn.LSTM draws every weight and bias from U(±1/sqrt(hidden)): fan-in = hidden.
	for l := int64(0); l < c.Layers; l++ {
		in := c.Embed
		if l > 0 {
			in = c.Hidden
		}
		p := fmt.Sprintf("rnn.%%s_l%d", l)
		m.layers = append(m.layers, [4]*Param{
			ps.add(fmt.Sprintf(p, "weight_ih"), RoleRecurrent, int(l), InitFanIn, c.Hidden, 0, 4*c.Hidden, in),
			ps.add(fmt.Sprintf(p, "weight_hh"), RoleRecurrent, int(l), InitFanIn, c.Hidden, 0, 4*c.Hidden, c.Hidden),
			ps.add(fmt.Sprintf(p, "bias_ih"), RoleRecurrent, int(l), InitFanIn, c.Hidden, 0, 4*c.Hidden),
			ps.add(fmt.Sprintf(p, "bias_hh"), RoleRecurrent, int(l), InitFanIn, c.Hidden, 0, 4*c.Hidden),
		})
	}
	m.decW = ps.add("decoder.weight", RoleHead, -1, InitFanIn, c.Hidden, 0, c.Vocab, c.Hidden)
	m.decB = ps.add("decoder.bias", RoleHead, -1, InitFanIn, c.Hidden, 0, c.Vocab)
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// MACs counts the forward multiply-accumulates of one sequence of SeqLen characters.
func (m *LSTMModel) MACs() float64 {
	c := m.Cfg
	t, hidden := float64(c.SeqLen), float64(c.Hidden)
	macs := t * hidden * float64(c.Vocab)
	for l := int64(0); l < c.Layers; l++ {
		in := float64(c.Embed)
		if l > 0 {
			in = hidden
		}
		macs += t * 4 * hidden * (in + hidden)
	}
	return macs
}

// Forward maps characters [K, B, T] (int64) to logits [K, B, T, vocab]; the state starts
// at zero for every sequence.
func (m *LSTMModel) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if x.Dim() != 3 || x.Size(0) != int64(m.params.K) || x.DType() != cuda.Int64 {
		s.Fail(fmt.Errorf("lstm: input %s %v, want int64 [%d B T]", x.DType(), x.Shape(), m.params.K))
		return nil
	}
	k, b, t := x.Size(0), x.Size(1), x.Size(2)
	h := embedding(s, pass.w(m.emb), x) // [K, B, T, E]
	dt := m.params.DType
	for _, l := range m.layers {
		// The input projection of every step at once; the recurrence one step at a time.
		xw := linear(s, h, pass.w(l[0]), pass.w(l[2])) // [K, B, T, 4H]
		state := s.Zeros(dt, x.Device(), k, b, c.Hidden)
		cell := state
		outs := make([]*cuda.Tensor, t)
		for step := int64(0); step < t; step++ {
			gates := s.Add(s.Select(xw, 2, step), linear(s, state, pass.w(l[1]), pass.w(l[3])))
			g := s.Split(gates, -1, c.Hidden, c.Hidden, c.Hidden, c.Hidden)
			if s.Err() != nil {
				return nil
			}
			cell = s.Add(s.Mul(s.Sigmoid(g[1]), cell), s.Mul(s.Sigmoid(g[0]), s.Tanh(g[2])))
			state = s.Mul(s.Sigmoid(g[3]), s.Tanh(cell))
			outs[step] = state
		}
		h = s.Stack(2, outs...)
	}
	return linear(s, h, pass.w(m.decW), pass.w(m.decB))
}
