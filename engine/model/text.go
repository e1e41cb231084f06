package model

import (
	"fmt"
	"math"

	"pfl/cuda"
)

// TextConfig is FedTP's character-level Transformer for Shakespeare (models/
// language_transformer.py): token embedding + sinusoidal position encoding → dropout →
// LayerNorm → post-norm encoder layers (separate W_q, W_k, W_v and output projection
// without bias; ReLU feed-forward) → output projection without bias, scaled by d^-0.5.
//
// Causal is on by default here. The official code passes no attention mask, so with
// targets being the inputs shifted by one, position t attends to token t+1 — its own
// answer — and its reported accuracies are not next-character accuracies. Turn Causal off
// only to reproduce that behaviour.
type TextConfig struct {
	Vocab, Dim, FFN int64   // 100, 128, 256
	Heads, HeadDim  int64   // 8 heads of 64
	Depth           int64   // 2 in FedTP's Shakespeare scripts
	SeqLen          int64   // sequence length the MACs are counted for (LEAF Shakespeare: 80)
	MaxLen          int64   // positions of the sinusoidal table (200)
	Dropout         float64 // 0.1, also on attention probabilities
	Causal          bool
}

// TextTransformer returns FedTP's Shakespeare sizes with a causal mask.
func TextTransformer(depth int64) TextConfig {
	return TextConfig{Vocab: 100, Dim: 128, FFN: 256, Heads: 8, HeadDim: 64, Depth: depth, SeqLen: 80, MaxLen: 200, Dropout: 0.1, Causal: true}
}

// Validate reports a configuration that cannot be built.
func (c TextConfig) Validate() error {
	if c.Vocab <= 0 || c.Dim <= 0 || c.FFN <= 0 || c.Heads <= 0 || c.HeadDim <= 0 || c.Depth <= 0 || c.MaxLen <= 0 || c.SeqLen <= 0 || c.SeqLen > c.MaxLen {
		return fmt.Errorf("text transformer: sizes must be positive and SeqLen <= MaxLen: %+v", c)
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		return fmt.Errorf("text transformer: dropout %g not in [0, 1)", c.Dropout)
	}
	return nil
}

// TextModel is the client-stacked text Transformer.
type TextModel struct {
	Cfg TextConfig
	base
	emb, pe  *Param
	lnW, lnB *Param
	layers   []textLayer
	prj      *Param
}

type textLayer struct {
	wq, wk, wv, fc, ln1W, ln1B *Param
	w1, b1, w2, b2, ln2W, ln2B *Param
}

// NewTextModel builds the text Transformer for k clients.
func NewTextModel(name string, c TextConfig, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*TextModel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &TextModel{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	inner := c.Heads * c.HeadDim
	// every matrix is xavier_uniform (the reference's init); vectors keep PyTorch defaults
	mat := func(name string, role Role, block int, out, in int64) *Param {
		return ps.add(name, role, block, InitXavier, in, out, out, in)
	}
	ln := func(name string, block int) (*Param, *Param) {
		return ps.add(name+".weight", RoleNorm, block, InitOnes, 0, 0, c.Dim), ps.add(name+".bias", RoleNorm, block, InitZeros, 0, 0, c.Dim)
	}
	m.emb = mat("encoder.src_word_emb.weight", RoleEmbedding, -1, c.Vocab, c.Dim)
	m.pe = ps.add("encoder.position_enc.pos_table", RolePosEmbed, -1, InitSinusoid, 0, 0, c.MaxLen, c.Dim)
	m.pe.Buffer = true
	m.lnW, m.lnB = ln("encoder.layer_norm", -1)
	for i := 0; i < int(c.Depth); i++ {
		p := fmt.Sprintf("encoder.layer_stack.%d.", i)
		var l textLayer
		l.wq = mat(p+"slf_attn.w_qs.weight", RoleAttnQKV, i, inner, c.Dim)
		l.wk = mat(p+"slf_attn.w_ks.weight", RoleAttnQKV, i, inner, c.Dim)
		l.wv = mat(p+"slf_attn.w_vs.weight", RoleAttnQKV, i, inner, c.Dim)
		l.fc = mat(p+"slf_attn.fc.weight", RoleAttnOut, i, c.Dim, inner)
		l.ln1W, l.ln1B = ln(p+"slf_attn.layer_norm", i)
		l.w1 = mat(p+"pos_ffn.w_1.weight", RoleMLP, i, c.FFN, c.Dim)
		l.b1 = ps.add(p+"pos_ffn.w_1.bias", RoleMLP, i, InitFanIn, c.Dim, 0, c.FFN)
		l.w2 = mat(p+"pos_ffn.w_2.weight", RoleMLP, i, c.Dim, c.FFN)
		l.b2 = ps.add(p+"pos_ffn.w_2.bias", RoleMLP, i, InitFanIn, c.FFN, 0, c.Dim)
		l.ln2W, l.ln2B = ln(p+"pos_ffn.layer_norm", i)
		m.layers = append(m.layers, l)
	}
	m.prj = mat("trg_word_prj.weight", RoleHead, -1, c.Vocab, c.Dim)
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// MACs counts the forward multiply-accumulates of one sequence of SeqLen characters.
func (m *TextModel) MACs() float64 {
	c := m.Cfg
	t, dim, inner := float64(c.SeqLen), float64(c.Dim), float64(c.Heads)*float64(c.HeadDim)
	per := t*dim*3*inner + 2*t*t*inner + t*inner*dim + 2*t*dim*float64(c.FFN)
	return float64(c.Depth)*per + t*dim*float64(c.Vocab)
}

// Forward maps characters [K, B, T] (int64) to logits [K, B, T, vocab].
func (m *TextModel) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if x.Dim() != 3 || x.Size(0) != int64(m.params.K) || x.DType() != cuda.Int64 || x.Size(2) > c.MaxLen {
		s.Fail(fmt.Errorf("text transformer: input %s %v, want int64 [%d B T<=%d]", x.DType(), x.Shape(), m.params.K, c.MaxLen))
		return nil
	}
	k, b, t := x.Size(0), x.Size(1), x.Size(2)
	h := s.Add(embedding(s, pass.w(m.emb), x), s.Unsqueeze(s.Narrow(pass.w(m.pe), 1, 0, t), 1)) // PE [K, 1, T, D]
	h = layerNorm(s, dropout(s, h, c.Dropout, pass), pass.w(m.lnW), pass.w(m.lnB), 1e-6)
	heads := func(z *cuda.Tensor) *cuda.Tensor { // [K, B, T, I] -> [K·B, H, T, dh]
		return s.Reshape(s.Permute(s.Reshape(z, k, b, t, c.Heads, c.HeadDim), 0, 1, 3, 2, 4), k*b, c.Heads, t, c.HeadDim)
	}
	attnDrop := 0.0
	if pass.train() {
		attnDrop = c.Dropout
	}
	for i := range m.layers {
		l := &m.layers[i]
		q, kk, v := linear(s, h, pass.w(l.wq), nil), linear(s, h, pass.w(l.wk), nil), linear(s, h, pass.w(l.wv), nil)
		a := m.attention(s, heads(q), heads(kk), heads(v), k, attnDrop, pass)
		a = s.Reshape(s.Permute(s.Reshape(a, k, b, c.Heads, t, c.HeadDim), 0, 1, 3, 2, 4), k, b, t, c.Heads*c.HeadDim)
		a = dropout(s, linear(s, a, pass.w(l.fc), nil), c.Dropout, pass)
		h = layerNorm(s, s.Add(a, h), pass.w(l.ln1W), pass.w(l.ln1B), 1e-6) // post-norm
		f := linear(s, s.ReLU(linear(s, h, pass.w(l.w1), pass.w(l.b1))), pass.w(l.w2), pass.w(l.b2))
		h = layerNorm(s, s.Add(dropout(s, f, c.Dropout, pass), h), pass.w(l.ln2W), pass.w(l.ln2B), 1e-6)
	}
	return s.MulScalar(linear(s, h, pass.w(m.prj), nil), 1/math.Sqrt(float64(c.Dim)))
}

// attention is causal SDPA over [K·B, H, T, dh]; with per-client dropout streams each
// client's rows draw their attention dropout from their own generator.
func (m *TextModel) attention(s *cuda.Scope, q, k, v *cuda.Tensor, clients int64, p float64, pass *Pass) *cuda.Tensor {
	if p == 0 || pass.Gens == nil {
		return s.SDPA(q, k, v, nil, cuda.AttentionOptions{Causal: m.Cfg.Causal, DropoutP: p, Gen: pass.gen()})
	}
	per := q.Size(0) / clients
	rows := make([]*cuda.Tensor, clients)
	for i := int64(0); i < clients; i++ {
		part := func(t *cuda.Tensor) *cuda.Tensor { return s.Narrow(t, 0, i*per, per) }
		rows[i] = s.SDPA(part(q), part(k), part(v), nil, cuda.AttentionOptions{Causal: m.Cfg.Causal, DropoutP: p, Gen: pass.Gens[i]})
	}
	return s.Cat(0, rows...)
}
