package model

import (
	"fmt"

	"pfl/cuda"
)

// ConvNetConfig is the LeNet-style baseline of pFedHN and FedTP (CNNTarget): conv 5×5 →
// max-pool 2 → conv 5×5 → max-pool 2 → FC → FC → classes, ReLU after every hidden layer.
// BatchNorm adds a BatchNorm after each convolution and hidden FC layer (CNN_B, for FedBN).
// FC2 0 leaves the second hidden layer out: conv → pool → conv → pool → FC → classes, the
// shape of PFLlib's FedAvgCNN.
type ConvNetConfig struct {
	Image, Channels int64 // input side and channels: 32 and 3 for CIFAR, 28 and 1 for MNIST-like
	Conv1, Conv2    int64 // filters: 16 and 32
	FC1, FC2        int64 // hidden widths: 120 and 84 (FC2 0: one hidden layer)
	Classes         int64
	BatchNorm       bool
}

// ConvNet returns the reference sizes for an image size, channel count and class count.
func ConvNet(image, channels, classes int64, batchNorm bool) ConvNetConfig {
	return ConvNetConfig{Image: image, Channels: channels, Conv1: 16, Conv2: 32, FC1: 120, FC2: 84, Classes: classes, BatchNorm: batchNorm}
}

// FedAvgCNN is PFLlib's FedAvgCNN (TsingZ0/PFLlib, system/flcore/trainmodel/models.py):
// conv 5×5 (32) → ReLU → max-pool 2 → conv 5×5 (64) → ReLU → max-pool 2 → FC 512 → ReLU →
// FC classes, no BatchNorm; on 28×28×1 images (PFLlib's dim 1024 for MNIST-like data) it
// has 582,026 parameters with 10 classes.
func FedAvgCNN(image, channels, classes int64) ConvNetConfig {
	return ConvNetConfig{Image: image, Channels: channels, Conv1: 32, Conv2: 64, FC1: 512, Classes: classes}
}

// hidden lists the hidden FC layers' widths.
func (c ConvNetConfig) hidden() []int64 {
	if c.FC2 == 0 {
		return []int64{c.FC1}
	}
	return []int64{c.FC1, c.FC2}
}

func (c ConvNetConfig) flat() int64 {
	side := ((c.Image-4)/2 - 4) / 2
	return c.Conv2 * side * side
}

// Validate reports a configuration that cannot be built.
func (c ConvNetConfig) Validate() error {
	if c.Image < 16 || c.Channels <= 0 || c.Conv1 <= 0 || c.Conv2 <= 0 || c.FC1 <= 0 || c.FC2 < 0 || c.Classes <= 0 {
		return fmt.Errorf("convnet: sizes must be positive and the image at least 16 pixels: %+v", c)
	}
	return nil
}

// ConvNetModel is the client-stacked ConvNet.
type ConvNetModel struct {
	Cfg ConvNetConfig
	base
	convW [2]*Param
	convB [2]*Param
	fcW   []*Param     // the hidden layers', then the head's
	fcB   []*Param     // the same
	bn    [4][4]*Param // weight, bias, running mean, running variance of each BatchNorm (convs, then hidden FCs)
}

// NewConvNet builds a ConvNet for k clients.
func NewConvNet(name string, c ConvNetConfig, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (*ConvNetModel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &ConvNetModel{Cfg: c, base: base{name, newSet(k, dev, dt)}}
	ps := m.params
	chans := [][2]int64{{c.Channels, c.Conv1}, {c.Conv1, c.Conv2}}
	for i, ch := range chans {
		fan := ch[0] * 25
		m.convW[i] = ps.add(fmt.Sprintf("conv%d.weight", i+1), RoleConv, -1, InitFanIn, fan, 0, ch[1], ch[0], 5, 5)
		m.convB[i] = ps.add(fmt.Sprintf("conv%d.bias", i+1), RoleConv, -1, InitFanIn, fan, 0, ch[1])
	}
	hidden := c.hidden()
	in := c.flat()
	for i, out := range append(hidden, c.Classes) {
		role := RoleFC
		if i == len(hidden) {
			role = RoleHead
		}
		m.fcW = append(m.fcW, ps.add(fmt.Sprintf("fc%d.weight", i+1), role, -1, InitFanIn, in, 0, out, in))
		m.fcB = append(m.fcB, ps.add(fmt.Sprintf("fc%d.bias", i+1), role, -1, InitFanIn, in, 0, out))
		in = out
	}
	if c.BatchNorm {
		for i, n := range append([]int64{c.Conv1, c.Conv2}, hidden...) {
			p := fmt.Sprintf("bn%d.", i+1)
			m.bn[i][0] = ps.add(p+"weight", RoleNorm, -1, InitOnes, 0, 0, n)
			m.bn[i][1] = ps.add(p+"bias", RoleNorm, -1, InitZeros, 0, 0, n)
			m.bn[i][2] = ps.add(p+"running_mean", RoleNormStats, -1, InitZeros, 0, 0, n)
			m.bn[i][3] = ps.add(p+"running_var", RoleNormStats, -1, InitOnes, 0, 0, n)
			m.bn[i][2].Buffer, m.bn[i][3].Buffer = true, true
		}
	}
	if err := ps.materialize(gen); err != nil {
		ps.Close()
		return nil, err
	}
	return m, nil
}

// MACs counts one image's forward multiply-accumulates.
func (m *ConvNetModel) MACs() float64 {
	c := m.Cfg
	s1 := float64(c.Image - 4)
	s2 := float64((c.Image-4)/2 - 4)
	conv1, conv2 := float64(c.Conv1), float64(c.Conv2)
	macs := conv1*float64(c.Channels)*25*s1*s1 + conv2*conv1*25*s2*s2
	in := float64(c.flat())
	for _, out := range append(c.hidden(), c.Classes) {
		macs += in * float64(out)
		in = float64(out)
	}
	return macs
}

// Forward maps images [K, B, C, H, W] to logits [K, B, classes].
func (m *ConvNetModel) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.Head(s, m.Features(s, x, pass), pass)
}

// Head is the last fully-connected layer over the features [K, B, FeatureDim].
func (m *ConvNetModel) Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	h := len(m.fcW) - 1
	return linear(s, f, pass.w(m.fcW[h]), pass.w(m.fcB[h]))
}

// Features maps images [K, B, C, H, W] to the last hidden layer's activations
// [K, B, FeatureDim] that the head reads.
func (m *ConvNetModel) Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	c := m.Cfg
	if s.Err() != nil {
		return nil
	}
	if x.Dim() != 5 || x.Size(0) != int64(m.params.K) || x.Size(2) != c.Channels || x.Size(3) != c.Image || x.Size(4) != c.Image {
		s.Fail(fmt.Errorf("convnet: input %v, want [%d B %d %d %d]", x.Shape(), m.params.K, c.Channels, c.Image, c.Image))
		return nil
	}
	k, b := x.Size(0), x.Size(1)
	norm := func(i int, h *cuda.Tensor) *cuda.Tensor {
		if !c.BatchNorm {
			return h
		}
		bn := m.bn[i]
		if pass.train() && pass.Mask != nil {
			return maskedBatchNorm(s, h, pass.w(bn[0]), pass.w(bn[1]), bn[2].T, bn[3].T, pass.Mask)
		}
		return batchNorm(s, h, pass.w(bn[0]), pass.w(bn[1]), bn[2].T, bn[3].T, pass.train())
	}
	h := x
	for i := 0; i < 2; i++ {
		h = s.ReLU(norm(i, conv2d(s, h, pass.w(m.convW[i]), pass.w(m.convB[i]), cuda.Conv2dOptions{})))
		h = fromGrouped(s, s.MaxPool2d(toGrouped(s, h), [2]int64{2, 2}, [2]int64{}, [2]int64{}), k)
	}
	h = s.Reshape(h, k, b, -1)
	for i := range len(m.fcW) - 1 {
		h = s.ReLU(norm(2+i, linear(s, h, pass.w(m.fcW[i]), pass.w(m.fcB[i]))))
	}
	return h
}
