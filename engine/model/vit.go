package model

import (
	"fmt"
	"math"

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
	Prefix     PrefixConfig     // FedPerfix's K/V prefixes (its adapter, and the vanilla prefixes of its ablation)
	Prompts    int64            // prompt tokens inserted after the class token in every block (deep VPT)
	MLPAdapter MLPAdapterConfig // sequential adapter after every block's MLP, per block or shared
}

// PrefixConfig is FedPerfix's "prefix" (Sun et al., ICCV 2023, §3.4–3.5) on the
// self-attention of the last Blocks blocks, and the vanilla prefixes of its §5.3 ablation
// (Table 6). The zero value is off; with only Blocks, Mid and Scale set it is FedPerfix as
// its official code runs it: an adapter Tanh(Z W_down + b) W_up + b (Eq. 4) whose per-token
// output of width 2·inner, times Scale, is added to K and V (qkv = qkv(Z) + s·[0, ΔK, ΔV];
// FedPerfix: mid 256, scale 1.5, all 12 blocks), PyTorch's default Linear init. Z is the
// attention's input, norm1(x), prompt tokens included.
//
// Kind picks what produces the prefixes, Form how they enter the attention, Init how they
// start:
//
//   - the paper's FedPerfix (Eq. 4, 5): Kind adapter, Form concat;
//   - the official code: Kind adapter, Form add (the default);
//   - Prefix-Z / Prefix-R as the official code runs them (`--vanilla zero|random`): Kind
//     linear, Form add, Init zero / default;
//   - Prefix-Z / Prefix-R as the paper writes them (Eq. 3, vanilla prefix-tuning): Kind
//     tokens, Form concat, Init zero / default.
type PrefixConfig struct {
	Blocks int64      // the last Blocks blocks get a prefix; 0: none (then every field must be zero)
	Mid    int64      // the adapter's bottleneck width (Kind adapter only; required there)
	Scale  float64    // s, multiplying every kind's prefixes (Eq. 5; Eq. 3's tokens have none, there s only reparameterizes); 0 means 1
	Kind   PrefixKind // what produces the prefixes; "": PrefixAdapter
	Form   PrefixForm // how they enter the attention; "": PrefixAdd
	Init   PrefixInit // how they start; "": PrefixInitDefault
	Length int64      // L, the number of prefix tokens per block (Kind tokens only; required there)
}

// PrefixKind says what produces a block's prefixes P_k, P_v.
type PrefixKind string

// Prefix kinds.
const (
	// PrefixAdapter is FedPerfix's parallel adapter (Eq. 4): P_k‖P_v = Tanh(Z W_down + b)
	// W_up + b, one row per token of Z; parameters attn.adapter.{down,up}.{weight,bias}.
	// The default ("" reads as adapter).
	PrefixAdapter PrefixKind = "adapter"
	// PrefixLinear is the official code's vanilla prefix (`--vanilla`): one Linear(dim →
	// 2·inner) per block, P_k‖P_v = Z W + b per token, no activation; parameters
	// attn.adapter.kv.{weight,bias}, the official names.
	PrefixLinear PrefixKind = "linear"
	// PrefixTokens is vanilla prefix-tuning as Eq. 3 writes it (Li & Liang): learnable
	// P_k, P_v of shape [Length, inner] per block and client, independent of the input;
	// parameters attn.prefix_k and attn.prefix_v. Needs Form concat.
	PrefixTokens PrefixKind = "tokens"
)

// PrefixForm says how prefixes enter the attention.
type PrefixForm string

// Prefix forms.
const (
	// PrefixAdd adds the per-token prefixes to the keys and values, K + s·P_k and V + s·P_v:
	// attention stays over T keys. The official code's form, and the default ("").
	PrefixAdd PrefixForm = "add"
	// PrefixConcat concatenates the prefixes along the sequence as extra keys and values
	// (Eq. 3, 5): softmax(q [s·P_k; K]ᵀ/√d) [s·P_v; V] over T + L keys, L = T for the
	// adapter and linear kinds (one prefix per token), L = Length for tokens. By Eq. 6 it is
	// the mixture (1 − λ)·Attn(q, K, V) + λ·Attn(q, s·P_k, s·P_v), λ the softmax mass on the
	// prefixes.
	PrefixConcat PrefixForm = "concat"
)

// PrefixInit says how a prefix's parameters start.
type PrefixInit string

// Prefix initializations.
const (
	// PrefixInitDefault is the default ("" reads as default). Adapter and linear kinds:
	// PyTorch's default Linear init U(±1/√fan_in), as the official code (`--vanilla random`
	// is Prefix-R). Tokens: U(−1, 1), whose variance 1/3 is the variance at init of the
	// linear kind's output on a LayerNorm-ed token ((dim + 1)/(3·dim) for weights and bias in
	// U(±1/√dim)), so the paper's Prefix-R starts at the scale of the official one; timm's
	// N(0, 0.02²) would start nearly at Prefix-Z, and N(0, 1) well above the keys' scale.
	PrefixInitDefault PrefixInit = "default"
	// PrefixInitZero starts the prefix at zero (Prefix-Z): the linear kind's weight and bias
	// (the official `--vanilla zero`), the tokens themselves, or the adapter's up
	// projection (weight and bias; its down projection keeps the default init, so that the
	// gradient reaches it once up has moved). In the add form a zero prefix leaves the
	// model exactly as without it; in the concat form zero keys still take softmax mass.
	PrefixInitZero PrefixInit = "zero"
)

func (p PrefixConfig) kind() PrefixKind {
	if p.Kind == "" {
		return PrefixAdapter
	}
	return p.Kind
}

func (p PrefixConfig) form() PrefixForm {
	if p.Form == "" {
		return PrefixAdd
	}
	return p.Form
}

func (p PrefixConfig) init() PrefixInit {
	if p.Init == "" {
		return PrefixInitDefault
	}
	return p.Init
}

// keys is the number of prefix keys a block with a prefix attends to beside its t tokens:
// 0 in the add form, t (adapter, linear) or Length (tokens) in the concat form.
func (p PrefixConfig) keys(t int64) int64 {
	switch {
	case p.form() == PrefixAdd:
		return 0
	case p.kind() == PrefixTokens:
		return p.Length
	}
	return t
}

// validate reports a prefix that cannot be built in a ViT of the given depth, naming the
// field.
func (p PrefixConfig) validate(depth int64) error {
	if p.Blocks == 0 {
		if p != (PrefixConfig{}) {
			return fmt.Errorf("vit: Prefix.Blocks is 0 (no prefix) but other prefix fields are set: %+v", p)
		}
		return nil
	}
	k := p.kind()
	switch {
	case p.Blocks < 0 || p.Blocks > depth:
		return fmt.Errorf("vit: Prefix.Blocks %d not in [0, %d] (the depth)", p.Blocks, depth)
	case k != PrefixAdapter && k != PrefixLinear && k != PrefixTokens:
		return fmt.Errorf("vit: Prefix.Kind %q: choose %s, %s or %s", p.Kind, PrefixAdapter, PrefixLinear, PrefixTokens)
	case p.form() != PrefixAdd && p.form() != PrefixConcat:
		return fmt.Errorf("vit: Prefix.Form %q: choose %s or %s", p.Form, PrefixAdd, PrefixConcat)
	case p.init() != PrefixInitDefault && p.init() != PrefixInitZero:
		return fmt.Errorf("vit: Prefix.Init %q: choose %s or %s", p.Init, PrefixInitDefault, PrefixInitZero)
	case math.IsNaN(p.Scale) || math.IsInf(p.Scale, 0):
		return fmt.Errorf("vit: Prefix.Scale %g is not finite", p.Scale)
	case k == PrefixAdapter && p.Mid <= 0:
		return fmt.Errorf("vit: Prefix.Mid %d: the adapter kind needs a positive bottleneck width", p.Mid)
	case k != PrefixAdapter && p.Mid != 0:
		return fmt.Errorf("vit: Prefix.Mid %d is set, but the %s kind has no bottleneck", p.Mid, k)
	case k == PrefixTokens && p.Length <= 0:
		return fmt.Errorf("vit: Prefix.Length %d: the tokens kind needs a positive number of prefix tokens", p.Length)
	case k != PrefixTokens && p.Length != 0:
		return fmt.Errorf("vit: Prefix.Length %d is set, but the %s kind has one prefix per token", p.Length, k)
	case k == PrefixTokens && p.form() != PrefixConcat:
		return fmt.Errorf("vit: Prefix.Form %s with the tokens kind: prefix tokens are extra keys, they need Form %s", p.form(), PrefixConcat)
	}
	return nil
}

// MLPAdapterConfig is a bottleneck adapter x + Scale·W_up Tanh(W_down x) after each block's
// MLP (FedPerfix §5.3's "Adapters", Table 6), zero-initialized on W_up (weight and bias) so
// that it starts as the identity. pfl applies it to the residual stream after the MLP's
// residual add; FedPerfix's official adapter.py applies it to the MLP branch before that add
// (x + m + A(m), m the MLP's output) and zero-initializes W_down too (then only W_up's bias
// ever receives a gradient).
type MLPAdapterConfig struct {
	Mid   int64   // bottleneck width; 0: no adapter (then every field must be zero)
	Scale float64 // 0 means 1
	// Shared makes one adapter, one parameter set (mlp_adapter.*, block index -1), that every
	// block applies, as the official adapter.py does; false: one adapter per block
	// (blocks.i.mlp_adapter.*), as the paper's Adapter-tuning describes.
	Shared bool
}

func (a MLPAdapterConfig) validate() error {
	switch {
	case a.Mid < 0:
		return fmt.Errorf("vit: MLPAdapter.Mid %d is negative", a.Mid)
	case a.Mid == 0 && a != (MLPAdapterConfig{}):
		return fmt.Errorf("vit: MLPAdapter.Mid is 0 (no adapter) but other adapter fields are set: %+v", a)
	case math.IsNaN(a.Scale) || math.IsInf(a.Scale, 0):
		return fmt.Errorf("vit: MLPAdapter.Scale %g is not finite", a.Scale)
	}
	return nil
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
	case c.Prompts < 0:
		return fmt.Errorf("vit: Prompts %d is negative", c.Prompts)
	}
	if err := c.Prefix.validate(c.Depth); err != nil {
		return err
	}
	return c.MLPAdapter.validate()
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
	downW, downB, upW, upB                 *Param // prefix: adapter kind (nil otherwise)
	kvW, kvB                               *Param // prefix: linear kind
	prefixK, prefixV                       *Param // prefix: tokens kind
	prompt                                 *Param
	adDownW, adDownB, adUpW, adUpB         *Param // MLP adapter (the same four in every block when shared)
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
			addPrefix(ps, &b, c.Prefix, p, i, c.Dim, inner)
		}
		if c.Prompts > 0 {
			b.prompt = ps.add(p+"prompt", RolePrompt, i, InitTimm, 0, 0, c.Prompts, c.Dim)
		}
		if c.MLPAdapter.Mid > 0 && !c.MLPAdapter.Shared {
			b.adDownW, b.adDownB, b.adUpW, b.adUpB = addMLPAdapter(ps, p, i, c.Dim, c.MLPAdapter.Mid)
		}
		m.blocks = append(m.blocks, b)
	}
	if c.MLPAdapter.Mid > 0 && c.MLPAdapter.Shared {
		dw, db, uw, ub := addMLPAdapter(ps, "", -1, c.Dim, c.MLPAdapter.Mid)
		for i := range m.blocks {
			b := &m.blocks[i]
			b.adDownW, b.adDownB, b.adUpW, b.adUpB = dw, db, uw, ub
		}
	}
	m.normW, m.normB = norm("norm", -1)
	m.headW, m.headB = lin("head", RoleHead, -1, c.Dim, c.Classes, true)
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// addPrefix declares block i's prefix parameters (names under prefix p, e.g. "blocks.3.").
// Every kind's parameters have RoleAdapter: FedPerfix keeps them local, as it keeps the MLP
// adapters of its ablation, and the official code selects them by the name part "adapter".
func addPrefix(ps *Set, b *vitBlock, pc PrefixConfig, p string, i int, dim, inner int64) {
	zero := pc.init() == PrefixInitZero
	or := func(def Init) Init {
		if zero {
			return InitZeros
		}
		return def
	}
	switch pc.kind() {
	case PrefixAdapter:
		b.downW = ps.add(p+"attn.adapter.down.weight", RoleAdapter, i, InitFanIn, dim, 0, pc.Mid, dim)
		b.downB = ps.add(p+"attn.adapter.down.bias", RoleAdapter, i, InitFanIn, dim, 0, pc.Mid)
		b.upW = ps.add(p+"attn.adapter.up.weight", RoleAdapter, i, or(InitFanIn), pc.Mid, 0, 2*inner, pc.Mid)
		b.upB = ps.add(p+"attn.adapter.up.bias", RoleAdapter, i, or(InitFanIn), pc.Mid, 0, 2*inner)
	case PrefixLinear:
		b.kvW = ps.add(p+"attn.adapter.kv.weight", RoleAdapter, i, or(InitFanIn), dim, 0, 2*inner, dim)
		b.kvB = ps.add(p+"attn.adapter.kv.bias", RoleAdapter, i, or(InitFanIn), dim, 0, 2*inner)
	case PrefixTokens:
		// InitFanIn with fan-in 1 is U(−1, 1) (see PrefixInitDefault)
		b.prefixK = ps.add(p+"attn.prefix_k", RoleAdapter, i, or(InitFanIn), 1, 0, pc.Length, inner)
		b.prefixV = ps.add(p+"attn.prefix_v", RoleAdapter, i, or(InitFanIn), 1, 0, pc.Length, inner)
	}
}

// addMLPAdapter declares an MLP adapter's parameters under prefix p ("" for the shared one).
func addMLPAdapter(ps *Set, p string, i int, dim, mid int64) (downW, downB, upW, upB *Param) {
	return ps.add(p+"mlp_adapter.down.weight", RoleAdapter, i, InitFanIn, dim, 0, mid, dim),
		ps.add(p+"mlp_adapter.down.bias", RoleAdapter, i, InitFanIn, dim, 0, mid),
		ps.add(p+"mlp_adapter.up.weight", RoleAdapter, i, InitZeros, 0, 0, dim, mid),
		ps.add(p+"mlp_adapter.up.bias", RoleAdapter, i, InitZeros, 0, 0, dim)
}

// tokens is the sequence length of the position embedding: patches plus the class token.
func (c ViTConfig) tokens() int64 {
	n := c.Image / c.Patch
	return n*n + 1
}

// MACs counts one image's forward multiply-accumulates.
func (m *ViT) MACs() float64 {
	c := m.Cfg
	f := func(v int64) float64 { return float64(v) }
	n := f(c.tokens() - 1)
	dim, inner, patch := f(c.Dim), f(c.Heads)*f(c.HeadDim), f(c.Patch)
	macs := n * f(c.Channels) * patch * patch * dim // patch embedding
	for i := int64(0); i < c.Depth; i++ {
		t := c.tokens() + c.Prompts
		keys := f(t) // keys and values attended to: the tokens, and prefixes in the concat form
		if i >= c.Depth-c.Prefix.Blocks {
			switch c.Prefix.kind() {
			case PrefixAdapter:
				macs += f(t) * (dim*f(c.Prefix.Mid) + f(c.Prefix.Mid)*2*inner)
			case PrefixLinear:
				macs += f(t) * dim * 2 * inner
			}
			keys += f(c.Prefix.keys(t))
		}
		macs += f(t) * dim * 3 * inner    // Q, K, V
		macs += 2 * f(t) * keys * inner   // Q Kᵀ and attention · V
		macs += f(t) * inner * dim        // output projection
		macs += 2 * f(t) * dim * f(c.MLP) // feed-forward
		macs += 2 * f(t) * dim * f(c.MLPAdapter.Mid)
	}
	return macs + dim*f(c.Classes)
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
		h = m.childBlock(s, &m.blocks[i], h, pass)
	}
	return s.Select(h, 2, 0)
}

// childBlock runs a block in a child scope on the CPU and keeps only its output: the
// block's intermediates (the QKV projection, the heads' copies, the attention scores, the
// MLP's hidden layer: 12× the token width at FedTP's default model) are freed at its end,
// and a training pass holds what autograd saved, an evaluation pass one block's worth.
// On CUDA (graph capture allocates from a pool of its own) and with a Capture (its maps
// live in s) the block runs in s.
func (m *ViT) childBlock(s *cuda.Scope, bl *vitBlock, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	if x == nil || x.Device().IsCUDA() || pass.capture() != nil {
		return m.block(s, bl, x, pass)
	}
	c := s.Child()
	defer c.Close()
	out := m.block(c, bl, x, pass)
	if err := c.Err(); err != nil {
		s.Fail(err)
		return nil
	}
	return s.Adopt(out)
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
	var pk, pv *cuda.Tensor // prefix keys and values of the concat form
	scale := orOne(c.Prefix.Scale)
	if bl.downW != nil || bl.kvW != nil {
		var kv *cuda.Tensor // [K, B, T, 2·inner]: one prefix per token
		if bl.downW != nil {
			kv = linear(s, s.Tanh(linear(s, h, pass.w(bl.downW), pass.w(bl.downB))), pass.w(bl.upW), pass.w(bl.upB)) // Eq. 4
		} else {
			kv = linear(s, h, pass.w(bl.kvW), pass.w(bl.kvB))
		}
		off := s.Split(kv, -1, inner, inner)
		if s.Err() != nil {
			return nil
		}
		if c.Prefix.form() == PrefixAdd { // the official code: qkv(Z) + s·[0, ΔK, ΔV]
			key = s.AddScaled(key, off[0], scale)
			val = s.AddScaled(val, off[1], scale)
		} else { // Eq. 5: [s·P_k; K], [s·P_v; V]
			pk, pv = s.MulScalar(off[0], scale), s.MulScalar(off[1], scale)
		}
	}
	if bl.prefixK != nil { // Eq. 3: the same L prefix tokens for every image
		l := c.Prefix.Length
		pk = s.Expand(s.Unsqueeze(s.MulScalar(pass.w(bl.prefixK), scale), 1), k, b, l, inner)
		pv = s.Expand(s.Unsqueeze(s.MulScalar(pass.w(bl.prefixV), scale), 1), k, b, l, inner)
	}
	a := attention(s, q, key, val, pk, pv, c.Heads, pass.capture())
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

// attention is multi-head scaled dot-product attention of queries q [K, B, T, I] over keys
// key and values val [K, B, S, I], I = heads·d, head h reading columns h·d … h·d + d − 1
// (timm's split). With prefixes pk and pv [K, B, L, I] (nil: none), they are concatenated
// before the keys and values along the sequence, [pk; key] and [pv; val] (Eq. 3 and 5), so
// each query attends over L + S keys: softmax(q [pk; key]ᵀ/√d) [pv; val]. Output [K, B, T, I].
// With a capture, the probabilities are computed explicitly and appended to it.
func attention(s *cuda.Scope, q, key, val, pk, pv *cuda.Tensor, heads int64, capture *Capture) *cuda.Tensor {
	if pk != nil {
		key, val = s.Cat(2, pk, key), s.Cat(2, pv, val)
	}
	if s.Err() != nil {
		return nil
	}
	k, b, t, inner := q.Size(0), q.Size(1), q.Size(2), q.Size(3)
	d := inner / heads
	split := func(z *cuda.Tensor) *cuda.Tensor { // [K, B, n, I] -> [K·B, H, n, d]
		n := z.Size(2)
		return s.Reshape(s.Permute(s.Reshape(z, k, b, n, heads, d), 0, 1, 3, 2, 4), k*b, heads, n, d)
	}
	var a *cuda.Tensor
	if capture != nil {
		qh, kh := split(q), split(key)
		p := s.Softmax(s.MulScalar(s.MatMul(qh, s.Transpose(kh, 2, 3)), 1/math.Sqrt(float64(d))), -1) // [K·B, H, T, S]
		capture.Attention = append(capture.Attention, s.Reshape(p, k, b, heads, t, kh.Size(2)))
		a = s.MatMul(p, split(val))
	} else {
		a = s.SDPA(split(q), split(key), split(val), nil, cuda.AttentionOptions{})
	}
	return s.Reshape(s.Permute(s.Reshape(a, k, b, heads, t, d), 0, 1, 3, 2, 4), k, b, t, inner)
}
