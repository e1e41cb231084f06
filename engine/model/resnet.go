package model

import (
	"fmt"

	"pfl/cuda"
)

// bottleneckExpansion is the Bottleneck's channel expansion: a block of width w outputs 4w
// channels (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, Table 1;
// torchvision's Bottleneck.expansion).
const bottleneckExpansion = 4

// ResNetConfig describes a Bottleneck ResNet in torchvision's layout
// (torchvision.models.resnet, after He et al., 2016): a 7×7/2 convolution stem without bias,
// BatchNorm and ReLU, a 3×3/2 max-pool with padding 1, then stages of Bottleneck blocks —
// 1×1 → 3×3 → 1×1 convolutions to 4× the stage's width, each followed by BatchNorm, ReLU
// after the first two and after the residual sum. The stride of a stage (1 for the first,
// 2 for the others) sits on the first block's 3×3 convolution ("ResNet v1.5", as torchvision
// and timm; the paper's v1 strides the first 1×1), and a block whose input differs in
// shape from its output gets a shortcut projection, downsample = 1×1 convolution with the
// stride + BatchNorm. Global average pooling and a linear classifier `fc` close it.
// BatchNorm: eps 1e-5, momentum 0.1, each client with its own running statistics.
type ResNetConfig struct {
	Image, Channels int64   // input side and channels
	Stem            int64   // output channels of the stem convolution (64)
	Widths          []int64 // Bottleneck width of each stage (64, 128, 256, 512); a stage outputs 4× its width
	Blocks          []int64 // Bottleneck blocks of each stage (3, 4, 6, 3 for ResNet-50)
	Classes         int64
}

// ResNet50 is torchvision's resnet50 at 224×224×3 with the given number of classes.
func ResNet50(classes int64) ResNetConfig {
	return ResNetConfig{Image: 224, Channels: 3, Stem: 64, Widths: []int64{64, 128, 256, 512}, Blocks: []int64{3, 4, 6, 3}, Classes: classes}
}

// Validate reports a configuration that cannot be built. Any positive image side works:
// every padded convolution and the max-pool map a side of 1 or more to 1 or more.
func (c ResNetConfig) Validate() error {
	switch {
	case c.Image < 1 || c.Channels < 1 || c.Stem < 1 || c.Classes < 1:
		return fmt.Errorf("resnet: image, channels, stem width and classes must be positive: %+v", c)
	case len(c.Widths) == 0 || len(c.Widths) != len(c.Blocks):
		return fmt.Errorf("resnet: %d widths for %d stages", len(c.Widths), len(c.Blocks))
	}
	for i := range c.Widths {
		if c.Widths[i] < 1 || c.Blocks[i] < 1 {
			return fmt.Errorf("resnet: stage %d has width %d, %d blocks", i, c.Widths[i], c.Blocks[i])
		}
	}
	return nil
}

// stride is the stride of block b of stage si: 2 on the first block of every stage but the
// first (torchvision's _make_layer with stride 2 for layer2..layer4).
func (c ResNetConfig) stride(si, b int) int64 {
	if si > 0 && b == 0 {
		return 2
	}
	return 1
}

// convOut is the side of a convolution's (or pool's) output.
func convOut(side, kernel, stride, pad int64) int64 { return (side+2*pad-kernel)/stride + 1 }

// ResNet is the client-stacked Bottleneck ResNet. Its parameters carry torchvision's names
// ("conv1.weight", "bn1.running_mean", "layer1.0.conv2.weight",
// "layer1.0.downsample.0.weight", "layer1.0.downsample.1.bias", "fc.weight"), in the order
// of torchvision's state_dict, so that Export and Import exchange state dicts with
// torchvision (and timm, whose resnet50 has the same names).
//
// BatchNorm's num_batches_tracked is not kept: with momentum fixed at 0.1 PyTorch never
// reads it, so it carries no state. Export writes none, and torchvision's load_state_dict
// accepts the file, strict included (BatchNorm fills in a missing counter when the state
// dict carries no version metadata, as one read from a safetensors file does); Import
// ignores the counters in a file, as it ignores every tensor the model does not have.
//
// Roles: the stem convolution is RolePatchEmbed; the block convolutions RoleConv; the
// shortcut projections' convolutions RoleDownsample; every BatchNorm affine (the
// shortcuts' included) RoleNorm and its running mean and variance RoleNormStats, so that
// FedBN keeps all of BatchNorm local; fc is RoleHead. Block indices count the Bottlenecks
// across stages (0..15 in ResNet-50), a shortcut belonging to its block; the stem and fc
// have -1.
//
// Initialization is torchvision's: kaiming_normal_ (fan_out, ReLU gain) for every
// convolution, BatchNorm weight 1 and bias 0, PyTorch's default for fc. (timm's resnet50
// also zeroes the last BatchNorm weight of every block; torchvision does so only with
// zero_init_residual, off by default.)
type ResNet struct {
	Cfg ResNetConfig
	base
	conv1    *Param
	bn1      resnetBN
	stages   [][]bottleneck
	fcW, fcB *Param
}

// resnetBN is one BatchNorm2d: affine weight and bias, running mean and variance.
type resnetBN struct{ w, b, mean, variance *Param }

// bottleneck is one torchvision Bottleneck block.
type bottleneck struct {
	stride   int64
	conv     [3]*Param // 1×1, 3×3 (the stride), 1×1
	bn       [3]resnetBN
	downConv *Param // the shortcut projection; nil for an identity shortcut
	downBN   resnetBN
}

// NewResNet builds a ResNet for k clients.
func NewResNet(name string, c ResNetConfig, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*ResNet, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &ResNet{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	conv := func(name string, role Role, block int, in, out, kside int64) *Param {
		return ps.add(name, role, block, InitKaiming, 0, out*kside*kside, out, in, kside, kside)
	}
	bn := func(prefix string, block int, n int64) resnetBN {
		r := resnetBN{
			w:        ps.add(prefix+".weight", RoleNorm, block, InitOnes, 0, 0, n),
			b:        ps.add(prefix+".bias", RoleNorm, block, InitZeros, 0, 0, n),
			mean:     ps.add(prefix+".running_mean", RoleNormStats, block, InitZeros, 0, 0, n),
			variance: ps.add(prefix+".running_var", RoleNormStats, block, InitOnes, 0, 0, n),
		}
		r.mean.Buffer, r.variance.Buffer = true, true
		return r
	}
	m.conv1 = conv("conv1.weight", RolePatchEmbed, -1, c.Channels, c.Stem, 7)
	m.bn1 = bn("bn1", -1, c.Stem)
	in, block := c.Stem, 0
	for si, w := range c.Widths {
		out := bottleneckExpansion * w
		var stage []bottleneck
		for b := 0; b < int(c.Blocks[si]); b++ {
			p := fmt.Sprintf("layer%d.%d.", si+1, b)
			blk := bottleneck{stride: c.stride(si, b)}
			for i, io := range [3][3]int64{{in, w, 1}, {w, w, 3}, {w, out, 1}} {
				blk.conv[i] = conv(fmt.Sprintf("%sconv%d.weight", p, i+1), RoleConv, block, io[0], io[1], io[2])
				blk.bn[i] = bn(fmt.Sprintf("%sbn%d", p, i+1), block, io[1])
			}
			if blk.stride != 1 || in != out { // torchvision's condition for a downsample
				blk.downConv = conv(p+"downsample.0.weight", RoleDownsample, block, in, out, 1)
				blk.downBN = bn(p+"downsample.1", block, out)
			}
			stage = append(stage, blk)
			in = out
			block++
		}
		m.stages = append(m.stages, stage)
	}
	m.fcW = ps.add("fc.weight", RoleHead, -1, InitFanIn, in, 0, c.Classes, in)
	m.fcB = ps.add("fc.bias", RoleHead, -1, InitFanIn, in, 0, c.Classes)
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// MACs counts one image's forward multiply-accumulates: every convolution (output pixels ×
// output channels × input channels × kernel area; the shortcut projections included) and
// fc. ResNet-50 at 224 with 1000 classes: 4,089,184,256; with 100 classes 4,087,341,056.
// He et al.'s Table 1 gives 3.8·10⁹ multiply-adds for their v1 layout, whose strided first
// 1×1 convolution of layer2..layer4 runs at the output's resolution: 3 × 77,070,336 fewer,
// 3,857,973,248.
func (m *ResNet) MACs() float64 {
	c := m.Cfg
	f := func(v int64) float64 { return float64(v) }
	side := convOut(c.Image, 7, 2, 3)
	macs := f(side) * f(side) * f(c.Stem) * f(c.Channels) * 49
	side = convOut(side, 3, 2, 1) // max-pool
	in := c.Stem
	for si, wi := range c.Widths {
		out := bottleneckExpansion * wi
		w := f(wi)
		for b := 0; b < int(c.Blocks[si]); b++ {
			st := c.stride(si, b)
			macs += f(side) * f(side) * w * f(in) // 1×1 at the input's resolution
			next := convOut(side, 3, st, 1)
			macs += f(next) * f(next) * (w*w*9 + f(out)*w) // 3×3 (strided) and the closing 1×1
			if st != 1 || in != out {
				macs += f(next) * f(next) * f(out) * f(in) // the shortcut projection
			}
			side, in = next, out
		}
	}
	return macs + f(in)*f(c.Classes)
}

// FeatureDim is the last stage's output width, 4× its Bottleneck width (2048 in ResNet-50).
func (m *ResNet) FeatureDim() int64 {
	return bottleneckExpansion * m.Cfg.Widths[len(m.Cfg.Widths)-1]
}

// Forward maps images [K, B, C, H, W] to logits [K, B, classes].
func (m *ResNet) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.Head(s, m.Features(s, x, pass), pass)
}

// Head is fc over the pooled features [K, B, FeatureDim].
func (m *ResNet) Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return linear(s, f, pass.w(m.fcW), pass.w(m.fcB))
}

// Features maps images [K, B, C, H, W] to the globally average-pooled last stage
// [K, B, FeatureDim] that fc reads. In training mode BatchNorm normalizes with each
// client's batch statistics and moves its running statistics (pass.Mask restricts both to
// the real samples); otherwise it uses the running statistics.
//
// Between the stem and the pooling the activations stay in the grouped layout
// [B, K·C, H, W]: every convolution is one grouped convolution with K groups, BatchNorm
// over K·C channels is each client's own, and max-pool, ReLU and the residual sums are
// elementwise or per channel, so no layer moves the clients back and forth.
func (m *ResNet) Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if !checkImages(s, "resnet", x, m.params.K, c.Channels, c.Image) {
		return nil
	}
	k := x.Size(0)
	h := toGrouped(s, x)
	h = s.ReLU(m.norm(s, &m.bn1, groupedConv(s, h, pass.w(m.conv1), k, 2, 3), k, pass))
	h = s.MaxPool2d(h, [2]int64{3, 3}, [2]int64{2, 2}, [2]int64{1, 1})
	for si := range m.stages {
		for bi := range m.stages[si] {
			h = m.block(s, &m.stages[si][bi], h, k, pass)
		}
	}
	if s.Err() != nil {
		return nil
	}
	pooled := s.Mean(h, false, 2, 3) // [B, K·C]
	return s.Transpose(s.Reshape(pooled, x.Size(1), k, -1), 0, 1)
}

// block is one Bottleneck on grouped activations [B, K·C, H, W]:
// ReLU(bn3(conv3(ReLU(bn2(conv2(ReLU(bn1(conv1(x)))))))) + shortcut(x)).
func (m *ResNet) block(s *cuda.Scope, b *bottleneck, x *cuda.Tensor, k int64, pass *Pass) *cuda.Tensor {
	h := s.ReLU(m.norm(s, &b.bn[0], groupedConv(s, x, pass.w(b.conv[0]), k, 1, 0), k, pass))
	h = s.ReLU(m.norm(s, &b.bn[1], groupedConv(s, h, pass.w(b.conv[1]), k, b.stride, 1), k, pass))
	h = m.norm(s, &b.bn[2], groupedConv(s, h, pass.w(b.conv[2]), k, 1, 0), k, pass)
	short := x
	if b.downConv != nil {
		short = m.norm(s, &b.downBN, groupedConv(s, x, pass.w(b.downConv), k, b.stride, 0), k, pass)
	}
	return s.ReLU(s.Add(h, short))
}

// groupedConv convolves grouped activations x [B, K·C, H, W] with each client's filters
// w [K, O, C, kh, kw] (no bias) as one convolution with K groups -> [B, K·O, H', W'].
func groupedConv(s *cuda.Scope, x, w *cuda.Tensor, k, stride, pad int64) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	ws := w.Shape()
	wg := s.Reshape(w, append([]int64{ws[0] * ws[1]}, ws[2:]...)...)
	return s.Conv2d(x, wg, nil, cuda.Conv2dOptions{Stride: [2]int64{stride, stride}, Padding: [2]int64{pad, pad}, Groups: k})
}

// norm is BatchNorm2d (eps 1e-5, momentum 0.1) of every client on grouped activations
// [B, K·C, H, W]: one batch_norm over K·C channels, with the affines and running
// statistics [K, C] flattened to [K·C] (the statistics as views, so the in-place update
// reaches the buffers). With pass.Mask in training, the masked form works on [K, B, C, H, W].
func (m *ResNet) norm(s *cuda.Scope, bn *resnetBN, h *cuda.Tensor, k int64, pass *Pass) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	w, b := pass.w(bn.w), pass.w(bn.b)
	if pass.train() && pass.Mask != nil {
		y := maskedBatchNorm(s, fromGrouped(s, h, k), w, b, bn.mean.T, bn.variance.T, pass.Mask)
		return toGrouped(s, y)
	}
	return s.BatchNorm(h, s.Reshape(w, -1), s.Reshape(b, -1), s.View(bn.mean.T, -1), s.View(bn.variance.T, -1), pass.train(), 0.1, 1e-5)
}
