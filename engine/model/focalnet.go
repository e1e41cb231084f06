package model

import (
	"fmt"

	"pfl/cuda"
)

// FocalNetConfig describes a FocalNet (Yang et al., "Focal Modulation Networks", 2022), as
// in microsoft/FocalNet's classification/focalnet.py: a Conv2d patch-embedding stem with
// LayerNorm, stages of pre-LN focal-modulation blocks with MLPs, Conv2d (2×2, stride 2)
// downsampling with LayerNorm between stages, a final LayerNorm, global average pooling and
// a linear head. No position embedding, no layer scale, no post-LN in the modulation.
type FocalNetConfig struct {
	Image, Channels int64   // input side and channels
	Patch           int64   // stem patch size (4)
	Dims, Depths    []int64 // per stage; one stage is an isotropic FocalNet
	Levels          int64   // focal levels L: 2 (SRF) or 3 (LRF)
	Window          int64   // kernel of the first level; level l uses Window + 2l
	MLPRatio        int64   // MLP hidden = MLPRatio · dim (4)
	Classes         int64
}

// FocalNetT is FocalNet-T at 224×224: dims 96..768, depths 2-2-6-2, focal window 3, with
// levels 2 (SRF) or 3 (LRF).
func FocalNetT(classes, levels int64) FocalNetConfig {
	return FocalNetConfig{Image: 224, Channels: 3, Patch: 4, Dims: []int64{96, 192, 384, 768}, Depths: []int64{2, 2, 6, 2},
		Levels: levels, Window: 3, MLPRatio: 4, Classes: classes}
}

// FocalNetCIFAR is an isotropic FocalNet for 32×32 images with a budget like FedTP's tiny
// ViT: patch 4, dim 128, depth 8, 2 focal levels (TransFed's backbone size is not
// published; this is our choice, see the notes).
func FocalNetCIFAR(classes int64) FocalNetConfig {
	return FocalNetConfig{Image: 32, Channels: 3, Patch: 4, Dims: []int64{128}, Depths: []int64{8}, Levels: 2, Window: 3, MLPRatio: 4, Classes: classes}
}

// Validate reports a configuration that cannot be built.
func (c FocalNetConfig) Validate() error {
	side := c.Image / max(c.Patch, 1)
	switch {
	case c.Image <= 0 || c.Patch <= 0 || c.Image%c.Patch != 0:
		return fmt.Errorf("focalnet: image %d is not a multiple of patch %d", c.Image, c.Patch)
	case len(c.Dims) == 0 || len(c.Dims) != len(c.Depths):
		return fmt.Errorf("focalnet: %d dims for %d stages", len(c.Dims), len(c.Depths))
	case side%(1<<(len(c.Dims)-1)) != 0:
		return fmt.Errorf("focalnet: %d×%d tokens cannot be halved %d times", side, side, len(c.Dims)-1)
	case c.Levels < 1 || c.Window < 1 || c.Window%2 == 0 || c.MLPRatio < 1 || c.Classes < 1 || c.Channels < 1:
		return fmt.Errorf("focalnet: levels, odd window, MLP ratio, classes and channels must be positive: %+v", c)
	}
	for i := range c.Dims {
		if c.Dims[i] < 1 || c.Depths[i] < 1 {
			return fmt.Errorf("focalnet: stage %d has dim %d, depth %d", i, c.Dims[i], c.Depths[i])
		}
	}
	return nil
}

// FocalNet is the client-stacked FocalNet.
type FocalNet struct {
	Cfg FocalNetConfig
	base
	stemW, stemB, stemNW, stemNB *Param
	stages                       []focalStage
	normW, normB, headW, headB   *Param
}

type focalStage struct {
	dim    int64
	blocks []focalBlock
	// downsampling to the next stage (nil in the last)
	downW, downB, downNW, downNB *Param
}

type focalBlock struct {
	norm1W, norm1B, fW, fB *Param
	ctx                    []*Param // depthwise [C, 1, k, k], no bias
	hW, hB, projW, projB   *Param
	norm2W, norm2B         *Param
	fc1W, fc1B, fc2W, fc2B *Param
}

// NewFocalNet builds a FocalNet for k clients.
func NewFocalNet(name string, c FocalNetConfig, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*FocalNet, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &FocalNet{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	// Linear: trunc-normal(0.02), bias 0; LayerNorm 1/0; convolutions: PyTorch's default.
	lin := func(name string, role Role, block int, in, out int64) (*Param, *Param) {
		return ps.add(name+".weight", role, block, InitTimm, 0, 0, out, in), ps.add(name+".bias", role, block, InitZeros, 0, 0, out)
	}
	norm := func(name string, block int, d int64) (*Param, *Param) {
		return ps.add(name+".weight", RoleNorm, block, InitOnes, 0, 0, d), ps.add(name+".bias", RoleNorm, block, InitZeros, 0, 0, d)
	}
	conv := func(name string, role Role, block int, in, out, kside int64) (*Param, *Param) {
		fan := in * kside * kside
		return ps.add(name+".weight", role, block, InitFanIn, fan, 0, out, in, kside, kside), ps.add(name+".bias", role, block, InitFanIn, fan, 0, out)
	}
	m.stemW, m.stemB = conv("patch_embed.proj", RolePatchEmbed, -1, c.Channels, c.Dims[0], c.Patch)
	m.stemNW, m.stemNB = norm("patch_embed.norm", -1, c.Dims[0])
	block := 0
	for si, d := range c.Dims {
		st := focalStage{dim: d}
		for bi := 0; bi < int(c.Depths[si]); bi++ {
			p := fmt.Sprintf("layers.%d.blocks.%d.", si, bi)
			var b focalBlock
			b.norm1W, b.norm1B = norm(p+"norm1", block, d)
			b.fW, b.fB = lin(p+"modulation.f", RoleFocalF, block, d, 2*d+c.Levels+1)
			for l := int64(0); l < c.Levels; l++ {
				ks := c.Window + 2*l
				b.ctx = append(b.ctx, ps.add(fmt.Sprintf("%smodulation.focal_layers.%d.0.weight", p, l), RoleFocalCtx, block, InitFanIn, ks*ks, 0, d, 1, ks, ks))
			}
			b.hW, b.hB = conv(p+"modulation.h", RoleFocalH, block, d, d, 1)
			b.projW, b.projB = lin(p+"modulation.proj", RoleFocalProj, block, d, d)
			b.norm2W, b.norm2B = norm(p+"norm2", block, d)
			b.fc1W, b.fc1B = lin(p+"mlp.fc1", RoleMLP, block, d, c.MLPRatio*d)
			b.fc2W, b.fc2B = lin(p+"mlp.fc2", RoleMLP, block, c.MLPRatio*d, d)
			st.blocks = append(st.blocks, b)
			block++
		}
		if si+1 < len(c.Dims) {
			p := fmt.Sprintf("layers.%d.downsample.", si)
			st.downW, st.downB = conv(p+"proj", RoleDownsample, -1, d, c.Dims[si+1], 2)
			st.downNW, st.downNB = norm(p+"norm", -1, c.Dims[si+1])
		}
		m.stages = append(m.stages, st)
	}
	last := c.Dims[len(c.Dims)-1]
	m.normW, m.normB = norm("norm", -1, last)
	m.headW, m.headB = lin("head", RoleHead, -1, last, c.Classes)
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// MACs counts one image's forward multiply-accumulates: stem, per block f, the depthwise
// context convolutions, h, proj and the MLP, the downsampling convolutions and the head.
func (m *FocalNet) MACs() float64 {
	c := m.Cfg
	f := func(v int64) float64 { return float64(v) }
	side := c.Image / c.Patch
	macs := f(side) * f(side) * f(c.Dims[0]) * f(c.Channels) * f(c.Patch) * f(c.Patch)
	for si, di := range c.Dims {
		n, d := f(side)*f(side), f(di)
		per := n*d*(2*d+f(c.Levels)+1) + n*d*d + n*d*d + 2*n*d*f(c.MLPRatio)*d
		for l := int64(0); l < c.Levels; l++ {
			ks := f(c.Window + 2*l)
			per += n * d * ks * ks
		}
		macs += f(c.Depths[si]) * per
		if si+1 < len(c.Dims) {
			side /= 2
			macs += f(side) * f(side) * f(c.Dims[si+1]) * d * 4
		}
	}
	return macs + f(c.Dims[len(c.Dims)-1])*f(c.Classes)
}

// channelsFirst and channelsLast move the channel dim of [K, B, ...] images.
func channelsFirst(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor { return s.Permute(x, 0, 1, 4, 2, 3) }
func channelsLast(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor  { return s.Permute(x, 0, 1, 3, 4, 2) }

// Forward maps images [K, B, C, H, W] to logits [K, B, classes].
func (m *FocalNet) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.Head(s, m.Features(s, x, pass), pass)
}

// Head is the linear classifier over features [K, B, channels].
func (m *FocalNet) Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return linear(s, f, pass.w(m.headW), pass.w(m.headB))
}

// Features maps images [K, B, C, H, W] to the normalized, average-pooled last stage
// [K, B, channels] that the head reads.
func (m *FocalNet) Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if !checkImages(s, "focalnet", x, m.params.K, c.Channels, c.Image) {
		return nil
	}
	h := conv2d(s, x, pass.w(m.stemW), pass.w(m.stemB), cuda.Conv2dOptions{Stride: [2]int64{c.Patch, c.Patch}})
	h = layerNorm(s, channelsLast(s, h), pass.w(m.stemNW), pass.w(m.stemNB), 1e-5) // [K, B, H, W, C]
	for si := range m.stages {
		st := &m.stages[si]
		for bi := range st.blocks {
			h = m.block(s, &st.blocks[bi], h, pass)
		}
		if st.downW != nil {
			h = conv2d(s, channelsFirst(s, h), pass.w(st.downW), pass.w(st.downB), cuda.Conv2dOptions{Stride: [2]int64{2, 2}})
			h = layerNorm(s, channelsLast(s, h), pass.w(st.downNW), pass.w(st.downNB), 1e-5)
		}
	}
	h = layerNorm(s, h, pass.w(m.normW), pass.w(m.normB), 1e-5)
	return s.Mean(h, false, 2, 3)
}

// block is one pre-LN focal-modulation block on channels-last x [K, B, H, W, C].
func (m *FocalNet) block(s *cuda.Scope, b *focalBlock, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	d := x.Size(-1)
	h := layerNorm(s, x, pass.w(b.norm1W), pass.w(b.norm1B), 1e-5)
	f := channelsFirst(s, linear(s, h, pass.w(b.fW), pass.w(b.fB))) // [K, B, 2C+L+1, H, W]
	parts := s.Split(f, 2, d, d, c.Levels+1)
	if s.Err() != nil {
		return nil
	}
	q, ctx, gates := parts[0], parts[1], parts[2]
	// Hierarchical contextualization: level l is a depthwise conv + GELU of level l-1,
	// weighted by its gate; the global level is the GELU of level L's spatial mean.
	var all *cuda.Tensor
	for l, w := range b.ctx {
		ks := c.Window + 2*int64(l)
		ctx = s.GELU(conv2d(s, ctx, pass.w(w), nil, cuda.Conv2dOptions{Padding: [2]int64{ks / 2, ks / 2}, Groups: d}), false)
		term := s.Mul(ctx, s.Narrow(gates, 2, int64(l), 1))
		if all == nil {
			all = term
		} else {
			all = s.Add(all, term)
		}
	}
	global := s.GELU(s.Mean(ctx, true, 3, 4), false)
	all = s.Add(all, s.Mul(global, s.Narrow(gates, 2, c.Levels, 1)))
	mod := conv2d(s, all, pass.w(b.hW), pass.w(b.hB), cuda.Conv2dOptions{})
	if cp := pass.capture(); cp != nil {
		cp.Modulator = append(cp.Modulator, mod)
	}
	out := linear(s, channelsLast(s, s.Mul(q, mod)), pass.w(b.projW), pass.w(b.projB))
	x = s.Add(x, out)
	h = layerNorm(s, x, pass.w(b.norm2W), pass.w(b.norm2B), 1e-5)
	h = linear(s, s.GELU(linear(s, h, pass.w(b.fc1W), pass.w(b.fc1B)), false), pass.w(b.fc2W), pass.w(b.fc2B))
	return s.Add(x, h)
}
