package harness

import (
	"fmt"
	"slices"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// ModelSpec names a model preset and the two sizes a benchmark may change: the input side
// (FedPerfix resizes CIFAR to 224; a small run shrinks 224 back to 32) and the depth (a
// small run keeps 2 blocks). The presets' own Build takes neither, hence the configs are rebuilt here from the
// model package's constructors.
type ModelSpec struct {
	Preset string // tiny-vit, tiny-vit-d8, vit-ti16, vit-s16, vit-b16, focalnet-cifar, focalnet-t-srf or focalnet-t-lrf
	Image  int64  // input side; 0: the preset's
	Depth  int64  // blocks of every stage (a ViT has one); 0: the preset's
}

// Builder returns the fl.Builder of s for classes outputs on dev in float32. A nil
// generator declares the model without allocating it (for MAC counts).
func (s ModelSpec) Builder(classes int64, dev cuda.Device) (fl.Builder, error) {
	vit := map[string]func(int64) model.ViTConfig{
		"tiny-vit":    func(c int64) model.ViTConfig { return model.TinyViT(c, 6) },
		"tiny-vit-d8": func(c int64) model.ViTConfig { return model.TinyViT(c, 8) },
		"vit-ti16":    model.ViTTi16,
		"vit-s16":     model.ViTS16,
		"vit-b16":     model.ViTB16,
	}
	focal := map[string]func(int64) model.FocalNetConfig{
		"focalnet-cifar": model.FocalNetCIFAR,
		"focalnet-t-srf": func(c int64) model.FocalNetConfig { return model.FocalNetT(c, 2) },
		"focalnet-t-lrf": func(c int64) model.FocalNetConfig { return model.FocalNetT(c, 3) },
	}
	if f, ok := vit[s.Preset]; ok {
		c := f(classes)
		if s.Image > 0 {
			c.Image = s.Image
		}
		if s.Depth > 0 {
			c.Depth = s.Depth
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("harness: model %s: %w", s.Preset, err)
		}
		return func(k int, g *cuda.Generator) (model.Model, error) {
			m, err := model.NewViT(s.Preset, c, k, dev, cuda.Float32, g)
			if err != nil { // not a typed nil inside the interface
				return nil, err
			}
			return m, nil
		}, nil
	}
	if f, ok := focal[s.Preset]; ok {
		c := f(classes)
		if s.Image > 0 {
			c.Image = s.Image
		}
		if s.Depth > 0 {
			c.Depths = slices.Repeat([]int64{s.Depth}, len(c.Depths))
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("harness: model %s: %w", s.Preset, err)
		}
		return func(k int, g *cuda.Generator) (model.Model, error) {
			m, err := model.NewFocalNet(s.Preset, c, k, dev, cuda.Float32, g)
			if err != nil {
				return nil, err
			}
			return m, nil
		}, nil
	}
	return nil, fmt.Errorf("harness: model %q: want a ViT or FocalNet preset (tiny-vit, tiny-vit-d8, vit-ti16, vit-s16, vit-b16, focalnet-cifar, focalnet-t-srf, focalnet-t-lrf)", s.Preset)
}

// Count is one sample's forward multiply-accumulates and one client's parameters,
// counted by the model from its configuration (nothing is allocated).
func (s ModelSpec) Count(classes int64) (macs, params int64, err error) {
	build, err := s.Builder(classes, cuda.CPU)
	if err != nil {
		return 0, 0, err
	}
	m, err := build(1, nil)
	if err != nil {
		return 0, 0, err
	}
	defer m.Close()
	return m.MACs(), m.Params().Count(), nil
}
