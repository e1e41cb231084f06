package model

import (
	"fmt"
	"sort"
	"strings"

	"pfl/cuda"
)

// Preset is a named model configuration.
type Preset struct {
	Name    string
	Summary string
	// Build makes the model for k clients with the given number of classes (vocabulary
	// models ignore it). A nil gen declares the model without allocating it.
	Build func(classes int64, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (Model, error)
	// Classes is the preset's default number of classes.
	Classes int64
}

func vitPreset(name, summary string, classes int64, cfg func(int64) ViTConfig) Preset {
	return Preset{name, summary, func(c int64, k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		return NewViT(name, cfg(c), k, dev, dt, g)
	}, classes}
}

func focalPreset(name, summary string, classes int64, cfg func(int64) FocalNetConfig) Preset {
	return Preset{name, summary, func(c int64, k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		return NewFocalNet(name, cfg(c), k, dev, dt, g)
	}, classes}
}

var presets = []Preset{
	vitPreset("tiny-vit", "FedTP's ViT for 32×32 images, depth 6 (official code)", 10, func(c int64) ViTConfig { return TinyViT(c, 6) }),
	vitPreset("tiny-vit-d8", "FedTP's ViT, depth 8 (paper)", 10, func(c int64) ViTConfig { return TinyViT(c, 8) }),
	vitPreset("vit-ti16", "timm ViT-Ti/16 at 224", 100, ViTTi16),
	vitPreset("vit-s16", "timm ViT-S/16 at 224 (FedPerfix's backbone)", 100, ViTS16),
	vitPreset("vit-b16", "timm ViT-B/16 at 224", 100, ViTB16),
	vitPreset("vit-s16-perfix", "ViT-S/16 with FedPerfix's K/V prefix adapters (mid 256, scale 1.5, 12 blocks)", 100, func(c int64) ViTConfig {
		v := ViTS16(c)
		v.Prefix = PrefixConfig{Blocks: 12, Mid: 256, Scale: 1.5}
		return v
	}),
	focalPreset("focalnet-t-srf", "FocalNet-T, 2 focal levels, at 224", 1000, func(c int64) FocalNetConfig { return FocalNetT(c, 2) }),
	focalPreset("focalnet-t-lrf", "FocalNet-T, 3 focal levels, at 224", 1000, func(c int64) FocalNetConfig { return FocalNetT(c, 3) }),
	focalPreset("focalnet-cifar", "isotropic FocalNet for 32×32 images: patch 4, dim 128, depth 8, 2 levels", 10, FocalNetCIFAR),
	{"text-transformer", "FedTP's Shakespeare Transformer, depth 2, causal (per 80-character sequence)", func(c int64, k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		return NewTextModel("text-transformer", TextTransformer(2), k, dev, dt, g)
	}, 100},
	{"lstm", "LEAF/FedTP next-character LSTM, 2×256 (per 80-character sequence)", func(c int64, k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		return NewLSTM("lstm", LSTM(), k, dev, dt, g)
	}, 100},
	{"convnet", "LeNet-style ConvNet baseline for 32×32×3 images", func(c int64, k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		return NewConvNet("convnet", ConvNet(32, 3, c, false), k, dev, dt, g)
	}, 10},
	{"convnet-bn", "the ConvNet with BatchNorm (FedBN)", func(c int64, k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		return NewConvNet("convnet-bn", ConvNet(32, 3, c, true), k, dev, dt, g)
	}, 10},
}

// Presets lists the named models.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// Lookup finds a preset by name; the error lists the valid names.
func Lookup(name string) (Preset, error) {
	for _, p := range presets {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	sort.Strings(names)
	return Preset{}, fmt.Errorf("model: unknown model %q; choose one of %s", name, strings.Join(names, ", "))
}
