package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"pfl/cuda"
)

// Spec is a model to build: a preset and the overrides every caller may set. A zero field
// keeps the preset's value; a field the preset's family has no use for is an error naming
// it (an explicit value is honoured or refused, never ignored). Spec is the one way pfl
// builds models: experiments, benchmarks, tests and `pfl models` all go through Build.
type Spec struct {
	Preset  string // a name from Presets
	Classes int64  // outputs of the head (image models); 0: the preset's

	// Input geometry. Image models: the square side and channels; text models: the
	// vocabulary and the sequence length MACs are counted for.
	Image, Channels int64
	Vocab, SeqLen   int64

	// Sizes. ViTs and the text Transformer: Depth, Dim, Heads, HeadDim, MLP (Patch for
	// ViTs). FocalNets: Depth sets every stage's depth, Dim the first stage's width (later
	// stages double it), Patch the stem. ResNets: Depth sets every stage's blocks, Dim the
	// stem's and first stage's width (later stages double it). ConvNets and the LSTM: none.
	Depth, Patch, Dim, Heads, HeadDim, MLP int64

	// Plug-ins of the ViTs (zero: the preset's) and FocalNet's focal levels. A non-zero
	// Prefix or Adapter replaces the preset's whole config (its zero fields mean their
	// defaults, not the preset's values): Prefix{Blocks: 12, Scale: 1.5, Kind: PrefixLinear,
	// Init: PrefixInitZero} on vit-s16 or vit-s16-perfix is the official code's Prefix-Z.
	Prefix  PrefixConfig     // FedPerfix's K/V prefixes: kind, form, init (see PrefixConfig)
	Prompts int64            // deep prompt tokens per block
	Adapter MLPAdapterConfig // a sequential adapter after every MLP, per block or shared
	Levels  int64            // FocalNet focal levels

	// Dropout replaces the preset's dropout rate (ViTs, the text Transformer and
	// digit5cnn); nil keeps it. A pointer, since 0 (no dropout) is a value a caller sets.
	Dropout *float64
}

// family is the kind of model a preset builds, which fixes the overrides it takes.
type family int

const (
	familyViT family = iota
	familyFocal
	familyConv
	familyText
	familyLSTM
	familyResNet
	familyDigit5
)

// takes lists each family's overrides by Spec field name (for the error naming a field the
// family lacks).
var takes = map[family][]string{
	familyViT:    {"Classes", "Image", "Channels", "Depth", "Patch", "Dim", "Heads", "HeadDim", "MLP", "Prefix", "Prompts", "Adapter", "Dropout"},
	familyFocal:  {"Classes", "Image", "Channels", "Depth", "Patch", "Dim", "Levels"},
	familyConv:   {"Classes", "Image", "Channels"},
	familyText:   {"Vocab", "SeqLen", "Depth", "Dim", "Heads", "HeadDim", "MLP", "Dropout"},
	familyLSTM:   {"Vocab", "SeqLen"},
	familyResNet: {"Classes", "Image", "Channels", "Depth", "Dim"},
	familyDigit5: {"Classes", "Image", "Channels", "Dropout"},
}

// Takes reports whether the preset's family reads the Spec field named field ("Depth").
func (p Preset) Takes(field string) bool { return slices.Contains(takes[p.family], field) }

// set lists the Spec fields s sets, by name.
func (s Spec) set() []string {
	var out []string
	for _, f := range []struct {
		name string
		on   bool
	}{{"Classes", s.Classes != 0}, {"Image", s.Image != 0}, {"Channels", s.Channels != 0}, {"Vocab", s.Vocab != 0},
		{"SeqLen", s.SeqLen != 0}, {"Depth", s.Depth != 0}, {"Patch", s.Patch != 0}, {"Dim", s.Dim != 0},
		{"Heads", s.Heads != 0}, {"HeadDim", s.HeadDim != 0}, {"MLP", s.MLP != 0}, {"Prefix", s.Prefix != (PrefixConfig{})},
		{"Prompts", s.Prompts != 0}, {"Adapter", s.Adapter != (MLPAdapterConfig{})}, {"Levels", s.Levels != 0},
		{"Dropout", s.Dropout != nil}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// Check reports a field the preset's family does not take, or a negative size; it needs
// no data (Builder checks the sizes against each other).
func (s Spec) Check() error {
	p, err := Lookup(s.Preset)
	if err != nil {
		return err
	}
	for _, f := range s.set() {
		if !slices.Contains(takes[p.family], f) {
			return fmt.Errorf("model %s has no %s to set (it takes %s)", s.Preset, f, strings.Join(takes[p.family], ", "))
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"Classes", s.Classes}, {"Image", s.Image}, {"Channels", s.Channels}, {"Vocab", s.Vocab}, {"SeqLen", s.SeqLen},
		{"Depth", s.Depth}, {"Patch", s.Patch}, {"Dim", s.Dim}, {"Heads", s.Heads}, {"HeadDim", s.HeadDim}, {"MLP", s.MLP},
		{"Prompts", s.Prompts}, {"Levels", s.Levels}, {"Prefix.Blocks", s.Prefix.Blocks}, {"Prefix.Mid", s.Prefix.Mid},
		{"Prefix.Length", s.Prefix.Length}, {"Adapter.Mid", s.Adapter.Mid}} {
		if f.v < 0 {
			return fmt.Errorf("model %s: %s %d is negative", s.Preset, f.name, f.v)
		}
	}
	return nil
}

// ResolvedDepth is the number of blocks s builds: its Depth, else its preset's (ViT and
// text models; an error for the other families).
func (s Spec) ResolvedDepth() (int64, error) {
	p, err := Lookup(s.Preset)
	if err != nil {
		return 0, err
	}
	if s.Depth != 0 {
		return s.Depth, nil
	}
	switch p.family {
	case familyViT:
		return p.vit(p.Classes).Depth, nil
	case familyText:
		return TextTransformer(2).Depth, nil
	}
	return 0, fmt.Errorf("model %s has no transformer blocks", s.Preset)
}

// Factory builds the model s describes for any number of clients.
type Factory func(k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (Model, error)

// Builder resolves s against its preset and validates the result once; the returned
// Factory builds it for k clients (a nil gen declares the model without allocating it).
func (s Spec) Builder() (Factory, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	p, _ := Lookup(s.Preset)
	classes := cmp.Or(s.Classes, p.Classes)
	var f Factory
	var err error
	switch p.family {
	case familyViT:
		f, err = factory(s.Preset, s.applyViT(p.vit(classes)), NewViT)
	case familyFocal:
		f, err = factory(s.Preset, s.applyFocal(p.focal(classes)), NewFocalNet)
	case familyConv:
		f, err = factory(s.Preset, p.conv(cmp.Or(s.Image, 32), cmp.Or(s.Channels, 3), classes), NewConvNet)
	case familyDigit5:
		c := Digit5CNN(cmp.Or(s.Image, 32), cmp.Or(s.Channels, 3), classes)
		if s.Dropout != nil {
			c.Dropout = *s.Dropout
		}
		f, err = factory(s.Preset, c, NewDigit5)
	case familyResNet:
		f, err = factory(s.Preset, s.applyResNet(p.resnet(classes)), NewResNet)
	case familyText:
		f, err = factory(s.Preset, s.applyText(TextTransformer(2)), NewTextModel)
	case familyLSTM:
		c := LSTM()
		c.Vocab, c.SeqLen = cmp.Or(s.Vocab, c.Vocab), cmp.Or(s.SeqLen, c.SeqLen)
		f, err = factory(s.Preset, c, NewLSTM)
	default:
		return nil, fmt.Errorf("model %s: unknown family", s.Preset)
	}
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", s.Preset, err)
	}
	return f, nil
}

// factory validates c and returns the Factory that builds it with newModel.
func factory[C interface{ Validate() error }, M Model](name string, c C, newModel func(string, C, int, cuda.Device, cuda.DType, *cuda.Generator) (M, error)) (Factory, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
		m, err := newModel(name, c, k, dev, dt, g)
		if err != nil {
			return nil, err // not m: a nil *ViT inside a Model interface is not nil, and Close on it panics
		}
		return m, nil
	}, nil
}

// applyViT is the preset's ViT c with s's overrides.
func (s Spec) applyViT(c ViTConfig) ViTConfig {
	c.Image, c.Channels, c.Depth, c.Patch = cmp.Or(s.Image, c.Image), cmp.Or(s.Channels, c.Channels), cmp.Or(s.Depth, c.Depth), cmp.Or(s.Patch, c.Patch)
	c.Dim, c.Heads, c.HeadDim, c.MLP = cmp.Or(s.Dim, c.Dim), cmp.Or(s.Heads, c.Heads), cmp.Or(s.HeadDim, c.HeadDim), cmp.Or(s.MLP, c.MLP)
	if s.Prefix != (PrefixConfig{}) {
		c.Prefix = s.Prefix
	}
	c.Prompts = cmp.Or(s.Prompts, c.Prompts)
	if s.Adapter != (MLPAdapterConfig{}) {
		c.MLPAdapter = s.Adapter
	}
	if s.Dropout != nil {
		c.Dropout = *s.Dropout
	}
	return c
}

// applyFocal is the preset's FocalNet c with s's overrides: Depth blocks in every stage,
// and Dim the first stage's width, each later stage doubling it, as FocalNet's.
func (s Spec) applyFocal(c FocalNetConfig) FocalNetConfig {
	c.Image, c.Channels, c.Levels = cmp.Or(s.Image, c.Image), cmp.Or(s.Channels, c.Channels), cmp.Or(s.Levels, c.Levels)
	if s.Depth != 0 {
		c.Depths = slices.Repeat([]int64{s.Depth}, len(c.Depths))
	}
	c.Patch = cmp.Or(s.Patch, c.Patch)
	if s.Dim != 0 {
		for i := range c.Dims {
			c.Dims[i] = s.Dim << i
		}
	}
	return c
}

// applyResNet is the preset's ResNet c with s's overrides: Dim the stem's and first
// stage's width, each later stage doubling it, and Depth blocks in every stage.
func (s Spec) applyResNet(c ResNetConfig) ResNetConfig {
	c.Image, c.Channels = cmp.Or(s.Image, c.Image), cmp.Or(s.Channels, c.Channels)
	if s.Dim != 0 {
		c.Stem = s.Dim
		for i := range c.Widths {
			c.Widths[i] = s.Dim << i
		}
	}
	if s.Depth != 0 {
		c.Blocks = slices.Repeat([]int64{s.Depth}, len(c.Blocks))
	}
	return c
}

// applyText is the text transformer c with s's overrides.
func (s Spec) applyText(c TextConfig) TextConfig {
	c.Vocab, c.SeqLen = cmp.Or(s.Vocab, c.Vocab), cmp.Or(s.SeqLen, c.SeqLen)
	c.MaxLen = max(c.MaxLen, c.SeqLen)
	c.Depth, c.Dim, c.Heads, c.HeadDim, c.FFN = cmp.Or(s.Depth, c.Depth), cmp.Or(s.Dim, c.Dim), cmp.Or(s.Heads, c.Heads), cmp.Or(s.HeadDim, c.HeadDim), cmp.Or(s.MLP, c.FFN)
	if s.Dropout != nil {
		c.Dropout = *s.Dropout
	}
	return c
}

// Build builds the model s describes for k clients.
func Build(s Spec, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (Model, error) {
	f, err := s.Builder()
	if err != nil {
		return nil, err
	}
	return f(k, dev, dt, gen)
}
