package model

import (
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
	or := func(v, def int64) int64 {
		if v != 0 {
			return v
		}
		return def
	}
	classes := or(s.Classes, p.Classes)
	name := s.Preset
	switch p.family {
	case familyViT:
		c := p.vit(classes)
		c.Image, c.Channels, c.Depth, c.Patch = or(s.Image, c.Image), or(s.Channels, c.Channels), or(s.Depth, c.Depth), or(s.Patch, c.Patch)
		c.Dim, c.Heads, c.HeadDim, c.MLP = or(s.Dim, c.Dim), or(s.Heads, c.Heads), or(s.HeadDim, c.HeadDim), or(s.MLP, c.MLP)
		if s.Prefix != (PrefixConfig{}) {
			c.Prefix = s.Prefix
		}
		c.Prompts = or(s.Prompts, c.Prompts)
		if s.Adapter != (MLPAdapterConfig{}) {
			c.MLPAdapter = s.Adapter
		}
		if s.Dropout != nil {
			c.Dropout = *s.Dropout
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewViT(name, c, k, dev, dt, g))
		}, nil
	case familyFocal:
		c := p.focal(classes)
		c.Image, c.Channels, c.Levels = or(s.Image, c.Image), or(s.Channels, c.Channels), or(s.Levels, c.Levels)
		if s.Depth != 0 {
			c.Depths = slices.Repeat([]int64{s.Depth}, len(c.Depths))
		}
		c.Patch = or(s.Patch, c.Patch)
		if s.Dim != 0 { // the first stage's width; each later stage doubles it, as FocalNet's
			for i := range c.Dims {
				c.Dims[i] = s.Dim << i
			}
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewFocalNet(name, c, k, dev, dt, g))
		}, nil
	case familyConv:
		c := p.conv(or(s.Image, 32), or(s.Channels, 3), classes)
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewConvNet(name, c, k, dev, dt, g))
		}, nil
	case familyDigit5:
		c := Digit5CNN(or(s.Image, 32), or(s.Channels, 3), classes)
		if s.Dropout != nil {
			c.Dropout = *s.Dropout
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewDigit5(name, c, k, dev, dt, g))
		}, nil
	case familyResNet:
		c := p.resnet(classes)
		c.Image, c.Channels = or(s.Image, c.Image), or(s.Channels, c.Channels)
		if s.Dim != 0 { // the stem's and first stage's width; each later stage doubles it
			c.Stem = s.Dim
			for i := range c.Widths {
				c.Widths[i] = s.Dim << i
			}
		}
		if s.Depth != 0 {
			c.Blocks = slices.Repeat([]int64{s.Depth}, len(c.Blocks))
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewResNet(name, c, k, dev, dt, g))
		}, nil
	case familyText:
		c := TextTransformer(2)
		c.Vocab, c.SeqLen = or(s.Vocab, c.Vocab), or(s.SeqLen, c.SeqLen)
		c.MaxLen = max(c.MaxLen, c.SeqLen)
		c.Depth, c.Dim, c.Heads, c.HeadDim, c.FFN = or(s.Depth, c.Depth), or(s.Dim, c.Dim), or(s.Heads, c.Heads), or(s.HeadDim, c.HeadDim), or(s.MLP, c.FFN)
		if s.Dropout != nil {
			c.Dropout = *s.Dropout
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewTextModel(name, c, k, dev, dt, g))
		}, nil
	case familyLSTM:
		c := LSTM()
		c.Vocab, c.SeqLen = or(s.Vocab, c.Vocab), or(s.SeqLen, c.SeqLen)
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		return func(k int, dev cuda.Device, dt cuda.DType, g *cuda.Generator) (Model, error) {
			return built(NewLSTM(name, c, k, dev, dt, g))
		}, nil
	}
	return nil, fmt.Errorf("model %s: unknown family", name)
}

// Build builds the model s describes for k clients.
func Build(s Spec, k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (Model, error) {
	f, err := s.Builder()
	if err != nil {
		return nil, err
	}
	return f(k, dev, dt, gen)
}

// built turns a constructor's (pointer, error) into (Model, error) with a nil interface on
// error: a nil *ViT inside a Model interface is not nil, and calling Close on it panics.
func built[M Model](m M, err error) (Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
