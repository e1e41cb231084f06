package model

import (
	"fmt"

	"pfl/cuda"
)

// Digit5Config is PFLlib's Digit5CNN (TsingZ0/PFLlib, system/flcore/trainmodel/models.py,
// the digit CNN of FedBN's experiments by way of KD3A's model/digit5.py), PFLlib's network
// with BatchNorm: three 5×5 convolutions of padding 2 (64, 64 and 128 filters), each
// followed by BatchNorm and ReLU, the first two also by a 3×3 max-pool of stride 2 and
// padding 1; then FC 3072 → BatchNorm → ReLU → dropout → FC 2048 → BatchNorm → ReLU → FC
// classes. On 32×32×3 images the first FC reads 8,192 features (PFLlib's fixed size) and the
// network has 31,805,898 parameters and 10,752 running statistics with 10 classes.
type Digit5Config struct {
	Image, Channels int64    // input side and channels: 32 and 3 in PFLlib
	Convs           [3]int64 // filters: 64, 64, 128
	Hidden          [2]int64 // hidden FC widths: 3072, 2048
	Classes         int64
	Dropout         float64 // after the first hidden FC's ReLU: 0.5 (nn.Dropout's default)
}

// Digit5CNN returns PFLlib's sizes for an image size, channel count and class count.
func Digit5CNN(image, channels, classes int64) Digit5Config {
	return Digit5Config{Image: image, Channels: channels, Convs: [3]int64{64, 64, 128}, Hidden: [2]int64{3072, 2048},
		Classes: classes, Dropout: 0.5}
}

// pooled is the side after one 3×3 max-pool of stride 2 and padding 1: ⌈side/2⌉.
func pooled(side int64) int64 { return (side+2-3)/2 + 1 }

// flat is the first FC's input width: the last convolution's filters on the twice-pooled side.
func (c Digit5Config) flat() int64 {
	side := pooled(pooled(c.Image))
	return c.Convs[2] * side * side
}

// Validate reports a configuration that cannot be built.
func (c Digit5Config) Validate() error {
	if c.Image < 4 || c.Channels <= 0 || c.Classes <= 0 || c.Dropout < 0 || c.Dropout >= 1 {
		return fmt.Errorf("digit5cnn: want an image of at least 4 pixels, positive channels and classes, dropout in [0, 1): %+v", c)
	}
	for _, n := range append(c.Convs[:], c.Hidden[:]...) {
		if n <= 0 {
			return fmt.Errorf("digit5cnn: layer widths must be positive: %+v", c)
		}
	}
	return nil
}

// Digit5Model is the client-stacked Digit5CNN. Its parameters carry PFLlib's names
// (encoder.conv1.weight, encoder.bn1.running_mean, linear.fc1.weight, fc.weight, …;
// PyTorch's num_batches_tracked counters, which BatchNorm with its default momentum never
// reads, are not kept), and FedBN's rule on both sides (PFLlib: a name containing "bn";
// pfl: the roles RoleNorm and RoleNormStats) keeps the same tensors local.
type Digit5Model struct {
	Cfg Digit5Config
	base
	convW, convB [3]*Param
	fcW, fcB     [3]*Param    // fc1, fc2, then the head
	bn           [5][4]*Param // weight, bias, running mean, running variance of bn1..bn5
}

// NewDigit5 builds a Digit5CNN for k clients, initialized as PyTorch initializes its layers
// (U(±1/√fan_in) for convolutions and linear layers, BatchNorm scales 1 and shifts 0).
func NewDigit5(name string, c Digit5Config, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*Digit5Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &Digit5Model{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	in := c.Channels
	for i, out := range c.Convs {
		fan := in * 25
		p := fmt.Sprintf("encoder.conv%d.", i+1)
		m.convW[i] = ps.add(p+"weight", RoleConv, -1, InitFanIn, fan, 0, out, in, 5, 5)
		m.convB[i] = ps.add(p+"bias", RoleConv, -1, InitFanIn, fan, 0, out)
		m.bn[i] = addBN(ps, fmt.Sprintf("encoder.bn%d.", i+1), out)
		in = out
	}
	in = c.flat()
	for i, out := range append(c.Hidden[:], c.Classes) {
		p, role := fmt.Sprintf("linear.fc%d.", i+1), RoleFC
		if i == len(c.Hidden) {
			p, role = "fc.", RoleHead
		}
		m.fcW[i] = ps.add(p+"weight", role, -1, InitFanIn, in, 0, out, in)
		m.fcB[i] = ps.add(p+"bias", role, -1, InitFanIn, in, 0, out)
		if i < len(c.Hidden) {
			m.bn[3+i] = addBN(ps, fmt.Sprintf("linear.bn%d.", 4+i), out)
		}
		in = out
	}
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// addBN declares a BatchNorm of n channels under prefix: the affine (RoleNorm) and the
// running statistics (RoleNormStats buffers).
func addBN(ps *Set, prefix string, n int64) [4]*Param {
	bn := [4]*Param{
		ps.add(prefix+"weight", RoleNorm, -1, InitOnes, 0, 0, n),
		ps.add(prefix+"bias", RoleNorm, -1, InitZeros, 0, 0, n),
		ps.add(prefix+"running_mean", RoleNormStats, -1, InitZeros, 0, 0, n),
		ps.add(prefix+"running_var", RoleNormStats, -1, InitOnes, 0, 0, n),
	}
	bn[2].Buffer, bn[3].Buffer = true, true
	return bn
}

// MACs counts one image's forward multiply-accumulates.
func (m *Digit5Model) MACs() float64 {
	c := m.Cfg
	var macs float64
	side, in := c.Image, c.Channels
	for i, out := range c.Convs {
		macs += float64(out*in*25) * float64(side*side)
		if i < 2 {
			side = pooled(side)
		}
		in = out
	}
	in = c.flat()
	for _, out := range append(c.Hidden[:], c.Classes) {
		macs += float64(in) * float64(out)
		in = out
	}
	return macs
}

// FeatureDim is the last hidden layer's width.
func (m *Digit5Model) FeatureDim() int64 { return m.Cfg.Hidden[len(m.Cfg.Hidden)-1] }

// Forward maps images [K, B, C, H, W] to logits [K, B, classes].
func (m *Digit5Model) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.Head(s, m.Features(s, x, pass), pass)
}

// Head is the last fully-connected layer over the features [K, B, FeatureDim].
func (m *Digit5Model) Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return linear(s, f, pass.w(m.fcW[2]), pass.w(m.fcB[2]))
}

// Features maps images [K, B, C, H, W] to the last hidden layer's activations [K, B, 2048]
// that the head reads.
func (m *Digit5Model) Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if !checkImages(s, "digit5cnn", x, m.params.K, c.Channels, c.Image) {
		return nil
	}
	k, b := x.Size(0), x.Size(1)
	norm := func(i int, h *cuda.Tensor) *cuda.Tensor {
		bn := m.bn[i]
		if pass.train() && pass.Mask != nil {
			return maskedBatchNorm(s, h, pass.w(bn[0]), pass.w(bn[1]), bn[2].T, bn[3].T, pass.Mask)
		}
		return batchNorm(s, h, pass.w(bn[0]), pass.w(bn[1]), bn[2].T, bn[3].T, pass.train())
	}
	pad := cuda.Conv2dOptions{Padding: [2]int64{2, 2}}
	h := x
	for i := range c.Convs {
		h = s.ReLU(norm(i, conv2d(s, h, pass.w(m.convW[i]), pass.w(m.convB[i]), pad)))
		if i < 2 {
			h = fromGrouped(s, s.MaxPool2d(toGrouped(s, h), [2]int64{3, 3}, [2]int64{2, 2}, [2]int64{1, 1}), k)
		}
	}
	h = s.Reshape(h, k, b, -1) // channel-major per image, as torch's view(batch, -1)
	h = s.ReLU(norm(3, linear(s, h, pass.w(m.fcW[0]), pass.w(m.fcB[0]))))
	h = dropout(s, h, c.Dropout, pass)
	return s.ReLU(norm(4, linear(s, h, pass.w(m.fcW[1]), pass.w(m.fcB[1]))))
}
