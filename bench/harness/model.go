package harness

import (
	"fmt"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// ModelSpec names a model preset and the two sizes a benchmark may change: the input side
// (FedPerfix resizes CIFAR to 224; a small run shrinks 224 back to 32) and the depth (a
// small run keeps 2 blocks). It is a model.Spec, built by the model package's factory.
type ModelSpec struct {
	Preset string // a preset from `pfl models`
	Image  int64  // input side; 0: the preset's
	Depth  int64  // blocks of every stage (a ViT has one); 0: the preset's
}

// Builder returns the fl.Builder of s for classes outputs on dev in float32. A nil
// generator declares the model without allocating it (for MAC counts).
func (s ModelSpec) Builder(classes int64, dev cuda.Device) (fl.Builder, error) {
	f, err := model.Spec{Preset: s.Preset, Classes: classes, Image: s.Image, Depth: s.Depth}.Builder()
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	return func(k int, g *cuda.Generator) (model.Model, error) { return f(k, dev, cuda.Float32, g) }, nil
}

// Count is one sample's forward multiply-accumulates and one client's parameters,
// counted by the model from its configuration (nothing is allocated). The workloads'
// models are fixed sizes (no bench flag resizes them), whose counts fit an int64.
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
	return int64(m.MACs()), m.Params().Count(), nil
}
