package model

import (
	"fmt"

	"pfl/cuda"
)

// ViTConfig describes a pre-norm Vision Transformer with a class token. Two layouts are
// covered: lucidrains' vit-pytorch as FedTP uses it (linear patch embedding over (p1 p2 c),
// Q/K/V without bias, inner width heads·head_dim ≠ dim, dropout, N(0,1) class token and
// position embedding, PyTorch default init) and timm's (convolution stem, Q/K/V with
// bias, LayerNorm eps 1e-6, trunc-normal(0.02) init). Parameter names are timm's for both.
type ViTConfig struct {
	Image, Patch, Channels int64   // input side (square), patch side, input channels
	Dim, Depth             int64   // token width and number of blocks
	Heads, HeadDim         int64   // attention heads and their width (inner = Heads·HeadDim)
	MLP                    int64   // hidden width of the feed-forward layers
	Classes                int64   // outputs of the head
	QKVBias                bool    // Q/K/V projection has a bias (timm: yes; FedTP: no)
	Eps                    float64 // LayerNorm epsilon: 1e-5 (PyTorch default) or 1e-6 (timm)
	ConvStem               bool    // timm's Conv2d patch embedding instead of a Linear over flattened patches
	TimmInit               bool    // timm's initialization instead of PyTorch defaults
	Dropout                float64 // after the embedding, the attention output and both FFN layers

	// Plug points (zero values: off).
	Prefix     PrefixConfig     // FedPerfix's parallel adapter producing K/V offsets
	Prompts    int64            // prompt tokens inserted after the class token in every block (deep VPT)
	MLPAdapter MLPAdapterConfig // sequential adapter after every block's MLP
}

// PrefixConfig is FedPerfix's "prefix": in each of the last Blocks blocks an adapter
// Tanh(x W_down + b) W_up + b produces per-token offsets for K and V from the attention's
// input, added to the projections scaled by Scale (FedPerfix: mid 256, scale 1.5, all 12
// blocks). Its init is PyTorch's default, as in FedPerfix's code (not zero).
type PrefixConfig struct {
	Blocks int64   // the last Blocks blocks get an adapter; 0: none
	Mid    int64   // bottleneck width
	Scale  float64 // s; 0 means 1
}

// MLPAdapterConfig is a bottleneck x + Scale·W_up Tanh(W_down x) after each block's MLP,
// zero-initialized on W_up so that it starts as the identity.
type MLPAdapterConfig struct {
	Mid   int64   // bottleneck width; 0: no adapter
	Scale float64 // 0 means 1
}

func orOne(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

// TinyViT is FedTP's ViT for 32×32 CIFAR images: patch 4, dim 128, 8 heads of 64, MLP 256,
// dropout 0.1 (the paper uses depth 8, the official code 6).
func TinyViT(classes, depth int64) ViTConfig {
	return ViTConfig{Image: 32, Patch: 4, Channels: 3, Dim: 128, Depth: depth, Heads: 8, HeadDim: 64,
		MLP: 256, Classes: classes, Eps: 1e-5, Dropout: 0.1}
}

func timmViT(dim, heads, classes int64) ViTConfig {
	return ViTConfig{Image: 224, Patch: 16, Channels: 3, Dim: dim, Depth: 12, Heads: heads, HeadDim: 64,
		MLP: 4 * dim, Classes: classes, QKVBias: true, Eps: 1e-6, ConvStem: true, TimmInit: true}
}

// ViTTi16 is timm's vit_tiny_patch16_224.
func ViTTi16(classes int64) ViTConfig { return timmViT(192, 3, classes) }

// ViTS16 is timm's vit_small_patch16_224, FedPerfix's backbone.
func ViTS16(classes int64) ViTConfig { return timmViT(384, 6, classes) }

// ViTB16 is timm's vit_base_patch16_224.
func ViTB16(classes int64) ViTConfig { return timmViT(768, 12, classes) }

// Validate reports a configuration that cannot be built.
func (c ViTConfig) Validate() error {
	switch {
	case c.Image <= 0 || c.Patch <= 0 || c.Image%c.Patch != 0:
		return fmt.Errorf("vit: image %d is not a multiple of patch %d", c.Image, c.Patch)
	case c.Channels <= 0 || c.Dim <= 0 || c.Depth <= 0 || c.Heads <= 0 || c.HeadDim <= 0 || c.MLP <= 0 || c.Classes <= 0:
		return fmt.Errorf("vit: channels, dim, depth, heads, head dim, MLP and classes must be positive: %+v", c)
	case c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("vit: dropout %g not in [0, 1)", c.Dropout)
	case c.Prefix.Blocks < 0 || c.Prefix.Blocks > c.Depth || (c.Prefix.Blocks > 0 && c.Prefix.Mid <= 0):
		return fmt.Errorf("vit: prefix on %d of %d blocks with mid %d", c.Prefix.Blocks, c.Depth, c.Prefix.Mid)
	case c.Prompts < 0 || c.MLPAdapter.Mid < 0:
		return fmt.Errorf("vit: negative prompts or adapter width")
	}
	return nil
}

// ViT is a client-stacked Vision Transformer.
type ViT struct {
	Cfg ViTConfig
	base
	blocks                                               []vitBlock
	patchW, patchB, cls, pos, normW, normB, headW, headB *Param
}

type vitBlock struct {
	norm1W, norm1B, qkvW, qkvB, outW, outB *Param
	norm2W, norm2B, fc1W, fc1B, fc2W, fc2B *Param
	downW, downB, upW, upB                 *Param // prefix adapter (nil when off)
	prompt                                 *Param
	adDownW, adDownB, adUpW, adUpB         *Param // MLP adapter
}

// NewViT builds a ViT for k clients on dev, drawing the initial weights from gen.
func NewViT(name string, c ViTConfig, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*ViT, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if k < 1 {
		return nil, fmt.Errorf("vit: %d clients", k)
	}
	m := &ViT{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	weight, bias := InitFanIn, InitFanIn
	if c.TimmInit {
		weight, bias = InitTimm, InitZeros
	}
	lin := func(name string, role Role, block int, in, out int64, withBias bool) (*Param, *Param) {
		w := ps.add(name+".weight", role, block, weight, in, out, out, in)
		if !withBias {
			return w, nil
		}
		return w, ps.add(name+".bias", role, block, bias, in, out, out)
	}
	norm := func(name string, block int) (*Param, *Param) {
		return ps.add(name+".weight", RoleNorm, block, InitOnes, 0, 0, c.Dim),
			ps.add(name+".bias", RoleNorm, block, InitZeros, 0, 0, c.Dim)
	}
	inner, patchIn := c.Heads*c.HeadDim, c.Channels*c.Patch*c.Patch
	if c.ConvStem {
		// timm keeps PyTorch's Conv2d default for the stem.
		m.patchW = ps.add("patch_embed.proj.weight", RolePatchEmbed, -1, InitFanIn, patchIn, c.Dim, c.Dim, c.Channels, c.Patch, c.Patch)
		m.patchB = ps.add("patch_embed.proj.bias", RolePatchEmbed, -1, InitFanIn, patchIn, c.Dim, c.Dim)
	} else {
		m.patchW, m.patchB = lin("patch_embed.proj", RolePatchEmbed, -1, patchIn, c.Dim, true)
	}
	tokInit, posInit := InitNormal, InitNormal
	if c.TimmInit {
		tokInit, posInit = InitTiny, InitTimm
	}
	m.cls = ps.add("cls_token", RoleCLS, -1, tokInit, 0, 0, 1, 1, c.Dim)
	m.pos = ps.add("pos_embed", RolePosEmbed, -1, posInit, 0, 0, 1, c.tokens(), c.Dim)
	for i := 0; i < int(c.Depth); i++ {
		var b vitBlock
		p := fmt.Sprintf("blocks.%d.", i)
		b.norm1W, b.norm1B = norm(p+"norm1", i)
		b.qkvW, b.qkvB = lin(p+"attn.qkv", RoleAttnQKV, i, c.Dim, 3*inner, c.QKVBias)
		b.outW, b.outB = lin(p+"attn.proj", RoleAttnOut, i, inner, c.Dim, true)
		b.norm2W, b.norm2B = norm(p+"norm2", i)
		b.fc1W, b.fc1B = lin(p+"mlp.fc1", RoleMLP, i, c.Dim, c.MLP, true)
		b.fc2W, b.fc2B = lin(p+"mlp.fc2", RoleMLP, i, c.MLP, c.Dim, true)
		if int64(i) >= c.Depth-c.Prefix.Blocks {
			b.downW = ps.add(p+"attn.adapter.down.weight", RoleAdapter, i, InitFanIn, c.Dim, 0, c.Prefix.Mid, c.Dim)
			b.downB = ps.add(p+"attn.adapter.down.bias", RoleAdapter, i, InitFanIn, c.Dim, 0, c.Prefix.Mid)
			b.upW = ps.add(p+"attn.adapter.up.weight", RoleAdapter, i, InitFanIn, c.Prefix.Mid, 0, 2*inner, c.Prefix.Mid)
			b.upB = ps.add(p+"attn.adapter.up.bias", RoleAdapter, i, InitFanIn, c.Prefix.Mid, 0, 2*inner)
		}
		if c.Prompts > 0 {
			b.prompt = ps.add(p+"prompt", RolePrompt, i, InitTimm, 0, 0, c.Prompts, c.Dim)
		}
		if c.MLPAdapter.Mid > 0 {
			b.adDownW = ps.add(p+"mlp_adapter.down.weight", RoleAdapter, i, InitFanIn, c.Dim, 0, c.MLPAdapter.Mid, c.Dim)
			b.adDownB = ps.add(p+"mlp_adapter.down.bias", RoleAdapter, i, InitFanIn, c.Dim, 0, c.MLPAdapter.Mid)
			b.adUpW = ps.add(p+"mlp_adapter.up.weight", RoleAdapter, i, InitZeros, 0, 0, c.Dim, c.MLPAdapter.Mid)
			b.adUpB = ps.add(p+"mlp_adapter.up.bias", RoleAdapter, i, InitZeros, 0, 0, c.Dim)
		}
		m.blocks = append(m.blocks, b)
	}
	m.normW, m.normB = norm("norm", -1)
	m.headW, m.headB = lin("head", RoleHead, -1, c.Dim, c.Classes, true)
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// tokens is the sequence length of the position embedding: patches plus the class token.
func (c ViTConfig) tokens() int64 {
	n := c.Image / c.Patch
	return n*n + 1
}

// MACs counts one image's forward multiply-accumulates.
func (m *ViT) MACs() int64 {
	c := m.Cfg
	n := c.tokens() - 1
	inner := c.Heads * c.HeadDim
	macs := n * c.Channels * c.Patch * c.Patch * c.Dim // patch embedding
	for i := int64(0); i < c.Depth; i++ {
		t := c.tokens() + c.Prompts
		macs += t * c.Dim * 3 * inner // Q, K, V
		macs += 2 * t * t * inner     // Q Kᵀ and attention · V
		macs += t * inner * c.Dim     // output projection
		macs += 2 * t * c.Dim * c.MLP // feed-forward
		if i >= c.Depth-c.Prefix.Blocks {
			macs += t * (c.Dim*c.Prefix.Mid + c.Prefix.Mid*2*inner)
		}
		macs += 2 * t * c.Dim * c.MLPAdapter.Mid
	}
	return macs + c.Dim*c.Classes
}

// Forward maps images x [K, B, C, H, W] to logits [K, B, classes].
func (m *ViT) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.Head(s, m.Features(s, x, pass), pass)
}

// Head is the classifier over features [K, B, Dim]: the final LayerNorm, then the linear
// layer (FedTP's mlp_head = LayerNorm → Linear; timm's norm then head, the norm being per
// token, gives the same on the class token).
func (m *ViT) Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	f = layerNorm(s, f, pass.w(m.normW), pass.w(m.normB), m.Cfg.Eps)
	return linear(s, f, pass.w(m.headW), pass.w(m.headB))
}

// Features maps images x [K, B, C, H, W] to the class token after the last block, before
// the final LayerNorm [K, B, Dim]: what FedTP's official ViT returns as its feature
// (produce_feature), which FedTP+KNN's memory and FedRoD's personal head read.
func (m *ViT) Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if !checkImages(s, "vit", x, m.params.K, c.Channels, c.Image) {
		return nil
	}
	k, b := x.Size(0), x.Size(1)
	g := c.Image / c.Patch
	var h *cuda.Tensor
	if c.ConvStem {
		h = conv2d(s, x, pass.w(m.patchW), pass.w(m.patchB), cuda.Conv2dOptions{Stride: [2]int64{c.Patch, c.Patch}})
		h = s.Transpose(s.Flatten(h, 3, 4), 2, 3) // [K, B, N, D]
	} else {
		// 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', then a linear layer
		p := s.Reshape(x, k, b, c.Channels, g, c.Patch, g, c.Patch)
		p = s.Reshape(s.Permute(p, 0, 1, 3, 5, 4, 6, 2), k, b, g*g, c.Patch*c.Patch*c.Channels)
		h = linear(s, p, pass.w(m.patchW), pass.w(m.patchB))
	}
	cls := s.Expand(pass.w(m.cls), k, b, 1, c.Dim) // [K, 1, 1, D] -> [K, B, 1, D]
	h = s.Cat(2, cls, h)
	h = s.Add(h, pass.w(m.pos)) // [K, 1, T, D] broadcasts over B
	h = dropout(s, h, c.Dropout, pass)
	for i := range m.blocks {
		h = m.block(s, &m.blocks[i], h, pass)
	}
	return s.Select(h, 2, 0)
}

func (m *ViT) block(s *cuda.Scope, bl *vitBlock, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	k, b := x.Size(0), x.Size(1)
	if bl.prompt != nil {
		pr := s.Expand(s.Unsqueeze(pass.w(bl.prompt), 1), k, b, c.Prompts, c.Dim)
		x = s.Cat(2, s.Narrow(x, 2, 0, 1), pr, s.Narrow(x, 2, 1, x.Size(2)-1))
	}
	t, inner := x.Size(2), c.Heads*c.HeadDim

	h := layerNorm(s, x, pass.w(bl.norm1W), pass.w(bl.norm1B), c.Eps)
	qkv := s.Split(linear(s, h, pass.w(bl.qkvW), pass.w(bl.qkvB)), -1, inner, inner, inner)
	if s.Err() != nil {
		return nil
	}
	q, key, val := qkv[0], qkv[1], qkv[2]
	if bl.downW != nil {
		a := s.Tanh(linear(s, h, pass.w(bl.downW), pass.w(bl.downB)))
		off := s.Split(linear(s, a, pass.w(bl.upW), pass.w(bl.upB)), -1, inner, inner)
		if s.Err() != nil {
			return nil
		}
		key = s.AddScaled(key, off[0], orOne(c.Prefix.Scale))
		val = s.AddScaled(val, off[1], orOne(c.Prefix.Scale))
	}
	heads := func(z *cuda.Tensor) *cuda.Tensor { // [K, B, T, I] -> [K·B, H, T, dh]
		return s.Reshape(s.Permute(s.Reshape(z, k, b, t, c.Heads, c.HeadDim), 0, 1, 3, 2, 4), k*b, c.Heads, t, c.HeadDim)
	}
	a := s.SDPA(heads(q), heads(key), heads(val), nil, cuda.AttentionOptions{})
	a = s.Reshape(s.Permute(s.Reshape(a, k, b, c.Heads, t, c.HeadDim), 0, 1, 3, 2, 4), k, b, t, inner)
	a = dropout(s, linear(s, a, pass.w(bl.outW), pass.w(bl.outB)), c.Dropout, pass)
	x = s.Add(x, a)

	h = layerNorm(s, x, pass.w(bl.norm2W), pass.w(bl.norm2B), c.Eps)
	h = dropout(s, s.GELU(linear(s, h, pass.w(bl.fc1W), pass.w(bl.fc1B)), false), c.Dropout, pass)
	h = dropout(s, linear(s, h, pass.w(bl.fc2W), pass.w(bl.fc2B)), c.Dropout, pass)
	x = s.Add(x, h)

	if bl.adDownW != nil {
		a := s.Tanh(linear(s, x, pass.w(bl.adDownW), pass.w(bl.adDownB)))
		x = s.AddScaled(x, linear(s, a, pass.w(bl.adUpW), pass.w(bl.adUpB)), orOne(c.MLPAdapter.Scale))
	}
	if bl.prompt != nil {
		x = s.Cat(2, s.Narrow(x, 2, 0, 1), s.Narrow(x, 2, 1+c.Prompts, t-1-c.Prompts))
	}
	return x
}
