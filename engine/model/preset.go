package model

import (
	"fmt"
	"sort"
	"strings"

	"pfl/cuda"
)

// Preset is a named model configuration; Spec overrides its sizes.
type Preset struct {
	Name    string
	Summary string
	Classes int64 // the preset's default number of classes (vocabulary models ignore it)

	family family
	vit    func(classes int64) ViTConfig                      // familyViT
	focal  func(classes int64) FocalNetConfig                 // familyFocal
	conv   func(image, channels, classes int64) ConvNetConfig // familyConv
	resnet func(classes int64) ResNetConfig                   // familyResNet
}

// Build makes the preset's model for k clients with the given number of classes (0: the
// preset's). A nil gen declares the model without allocating it.
func (p Preset) Build(classes int64, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (Model, error) {
	s := Spec{Preset: p.Name}
	if p.family != familyText && p.family != familyLSTM {
		s.Classes = classes
	}
	return Build(s, k, dev, dt, gen)
}

func vitPreset(name, summary string, classes int64, cfg func(int64) ViTConfig) Preset {
	return Preset{Name: name, Summary: summary, Classes: classes, family: familyViT, vit: cfg}
}

func focalPreset(name, summary string, classes int64, cfg func(int64) FocalNetConfig) Preset {
	return Preset{Name: name, Summary: summary, Classes: classes, family: familyFocal, focal: cfg}
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
	{Name: "text-transformer", Summary: "FedTP's Shakespeare Transformer, depth 2, causal (per 80-character sequence)", Classes: 100, family: familyText},
	{Name: "lstm", Summary: "LEAF/FedTP next-character LSTM, 2×256 (per 80-character sequence)", Classes: 100, family: familyLSTM},
	{Name: "convnet", Summary: "LeNet-style ConvNet baseline for 32×32×3 images", Classes: 10, family: familyConv,
		conv: func(i, c, k int64) ConvNetConfig { return ConvNet(i, c, k, false) }},
	{Name: "convnet-bn", Summary: "the ConvNet with BatchNorm (FedBN)", Classes: 10, family: familyConv,
		conv: func(i, c, k int64) ConvNetConfig { return ConvNet(i, c, k, true) }},
	{Name: "fedavgcnn", Summary: "PFLlib's FedAvgCNN: conv 5×5 32, pool, conv 5×5 64, pool, FC 512, head (28×28×1: 582,026 parameters)", Classes: 10, family: familyConv,
		conv: FedAvgCNN},
	{Name: "fedavgcnn-bn", Summary: "fedavgcnn with BatchNorm after both convolutions and FC 512 (pfl's variant; PFLlib's own BatchNorm network is digit5cnn)", Classes: 10, family: familyConv,
		conv: func(i, c, k int64) ConvNetConfig { cfg := FedAvgCNN(i, c, k); cfg.BatchNorm = true; return cfg }},
	{Name: "digit5cnn", Summary: "PFLlib's Digit5CNN (FedBN's digit CNN): 3 convs 5×5 64-64-128 and FC 3072-2048, BatchNorm after each, dropout 0.5 (32×32×3: 31,805,898 parameters)", Classes: 10, family: familyDigit5},
	{Name: "resnet50", Summary: "torchvision's ResNet-50 (v1.5, BatchNorm) at 224, FedPerfix's CNN beside ViT-S", Classes: 100, family: familyResNet, resnet: ResNet50},
}

// IsFocalNet reports whether the preset builds a FocalNet.
func (p Preset) IsFocalNet() bool { return p.family == familyFocal }

// IsText reports whether the preset reads character sequences.
func (p Preset) IsText() bool { return p.family == familyText || p.family == familyLSTM }

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
