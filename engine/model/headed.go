package model

import (
	"fmt"

	"pfl/cuda"
)

// Headed is a model that ends in a linear classifier over a feature vector, so algorithms
// can reach the features: FedRoD puts a second head on them, FedTP+KNN keeps them in a
// memory. Forward(x) equals Head(Features(x)).
type Headed interface {
	Model
	// Features maps a batch [K, B, ...] to the features [K, B, D] the head reads.
	Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor
	// Head maps features [K, B, D] to logits [K, B, classes].
	Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor
	// FeatureDim is D.
	FeatureDim() int64
}

// HeadedOf is m as a Headed model, for an algorithm that reads the features its head
// reads (FedRoD's second head, FedTP+KNN's memory); the error names a model that does not
// expose them.
func HeadedOf(m Model) (Headed, error) {
	if h, ok := m.(Headed); ok {
		return h, nil
	}
	return nil, fmt.Errorf("model %s does not expose the features its head reads", m.Name())
}

// TwoHeadsOf is m as NewTwoHeads made it, for FedRoD's loss on its two heads; the error
// names a model without a personal head.
func TwoHeadsOf(m Model) (*TwoHeads, error) {
	if h, ok := m.(*TwoHeads); ok {
		return h, nil
	}
	return nil, fmt.Errorf("model %s has no personal head", m.Name())
}

// FeatureDim is the token width.
func (m *ViT) FeatureDim() int64 { return m.Cfg.Dim }

// FeatureDim is the last stage's width.
func (m *FocalNet) FeatureDim() int64 { return m.Cfg.Dims[len(m.Cfg.Dims)-1] }

// FeatureDim is the last hidden layer's width.
func (m *ConvNetModel) FeatureDim() int64 { return m.Cfg.hidden()[len(m.Cfg.hidden())-1] }

// FeatureDim is the inner model's.
func (m *TwoHeads) FeatureDim() int64 { return m.inner.FeatureDim() }

// The image classifiers expose their features.
var (
	_ Headed = (*ViT)(nil)
	_ Headed = (*FocalNet)(nil)
	_ Headed = (*ConvNetModel)(nil)
	_ Headed = (*ResNet)(nil)
	_ Headed = (*Digit5Model)(nil)
	_ Headed = (*TwoHeads)(nil)
)

// TwoHeads is a Headed model with a second linear classifier beside its head, of role
// RolePersonalHead: FedRoD's linear variant (Chen & Chao, "On Bridging Generic and
// Personalized Federated Learning for Image Classification", ICLR 2022), where the
// generic head serves the federation and the personal head corrects it per client.
// Forward is the personalized prediction, generic plus personal logits.
type TwoHeads struct {
	inner  Headed
	extra  *Set // the personal head's parameters, owned here
	params *Set // the inner model's parameters followed by extra's
	pW, pB *Param
}

// NewTwoHeads adds a personal head (PyTorch's default Linear init, drawn from gen; a nil
// gen declares it only) with as many outputs as inner's head, over inner's features.
// TwoHeads owns inner from here on.
func NewTwoHeads(inner Headed, gen *cuda.Generator) (*TwoHeads, error) {
	dim := inner.FeatureDim()
	var classes int64
	for _, p := range inner.Params().ByRole(RoleHead) {
		if len(p.Shape) == 2 && p.Shape[1] == dim {
			classes = p.Shape[0]
		}
	}
	if classes < 1 {
		return nil, fmt.Errorf("model: %s has no linear head over its %d features", inner.Name(), dim)
	}
	in := inner.Params()
	m := &TwoHeads{inner: inner, extra: newSet(in.K, in.Device, in.DType)}
	m.pW = m.extra.add("head_personal.weight", RolePersonalHead, -1, InitFanIn, dim, 0, classes, dim)
	m.pB = m.extra.add("head_personal.bias", RolePersonalHead, -1, InitFanIn, dim, 0, classes)
	if err := m.extra.materialize(gen); err != nil {
		m.extra.Close()
		return nil, err
	}
	m.params = newSet(in.K, in.Device, in.DType)
	for _, p := range append(append([]*Param(nil), in.List...), m.extra.List...) {
		m.params.List = append(m.params.List, p)
		m.params.byName[p.Name] = p
	}
	return m, nil
}

// Name is the inner model's name.
func (m *TwoHeads) Name() string { return m.inner.Name() }

// Params are the inner model's parameters, then the personal head's.
func (m *TwoHeads) Params() *Set { return m.params }

// MACs adds the personal head's to the inner model's.
func (m *TwoHeads) MACs() float64 { return m.inner.MACs() + float64(m.pW.Numel()) }

// Close frees both.
func (m *TwoHeads) Close() error {
	err := m.inner.Close()
	if e := m.extra.Close(); err == nil {
		err = e
	}
	return err
}

// Features are the inner model's.
func (m *TwoHeads) Features(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.inner.Features(s, x, pass)
}

// Head is the personalized prediction from features: generic plus personal logits.
func (m *TwoHeads) Head(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return s.Add(m.inner.Head(s, f, pass), m.PersonalHead(s, f, pass))
}

// GenericHead is the inner model's head.
func (m *TwoHeads) GenericHead(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.inner.Head(s, f, pass)
}

// PersonalHead is the personal classifier alone.
func (m *TwoHeads) PersonalHead(s *cuda.Scope, f *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return linear(s, f, pass.w(m.pW), pass.w(m.pB))
}

// Forward is the personalized prediction.
func (m *TwoHeads) Forward(s *cuda.Scope, x *cuda.Tensor, pass *Pass) *cuda.Tensor {
	return m.Head(s, m.Features(s, x, pass), pass)
}
