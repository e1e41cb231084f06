package model

import (
	"math"
	"strings"
	"testing"

	"pfl/cuda"
)

// builder makes a model for k clients with weights drawn from gen (float64, CPU).
type builder func(k int, gen *cuda.Generator) (Model, error)

// inputFn draws a client-stacked batch for k clients.
type inputFn func(s *cuda.Scope, g *cuda.Generator, k int64) *cuda.Tensor

// checkStackedEqualsSeparate proves that a K-stacked model computes what K separate
// single-client models with the same weights compute: outputs, and the gradients of
// Σ_k <y_k, R_k> with respect to every parameter row.
func checkStackedEqualsSeparate(t *testing.T, build builder, input inputFn, train bool) {
	t.Helper()
	checkStacked(t, build, input, train, nil)
}

// checkStacked is checkStackedEqualsSeparate with an optional per-sample mask [K·B]
// (K = 3, B = 2) passed to every forward pass.
func checkStacked(t *testing.T, build builder, input inputFn, train bool, mask []float32) {
	t.Helper()
	checkStackedGens(t, build, input, train, mask, false)
}

// streams returns one dropout generator per client, seeded by client index (fresh each
// call, so a separate run replays exactly the stream its stacked row used).
func streams(t *testing.T, from, n int64) []*cuda.Generator {
	var out []*cuda.Generator
	for c := from; c < from+n; c++ {
		g, err := cuda.NewGenerator(uint64(1000+c), cuda.CPU)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		out = append(out, g)
	}
	return out
}

func checkStackedGens(t *testing.T, build builder, input inputFn, train bool, mask []float32, perClient bool) {
	t.Helper()
	const k = 3
	g, _ := cuda.NewGenerator(42, cuda.CPU)
	defer g.Close()
	stacked, err := build(k, g)
	if err != nil {
		t.Fatal(err)
	}
	defer stacked.Close()
	s := cuda.NewScope()
	defer s.Close()
	// Make the clients' rows differ, so that a mix-up between clients shows.
	s.SetGradEnabled(false)
	for _, p := range stacked.Params().List {
		if p.Role == RoleNormStats {
			continue
		}
		noise := s.Randn(g, cuda.Float64, cuda.CPU, p.T.Shape()...)
		s.CopyFrom(p.T, s.Add(p.T, s.MulScalar(noise, 0.05)))
	}
	// The weights and buffers as they are before the stacked forward (which updates
	// BatchNorm's running statistics in place when training).
	before := make([]*cuda.Tensor, len(stacked.Params().List))
	for i, p := range stacked.Params().List {
		before[i] = s.Clone(p.T)
	}
	s.SetGradEnabled(true)
	x := input(s, g, k)
	var m *cuda.Tensor
	if mask != nil {
		m = cuda.FromSlice(s, cuda.CPU, mask, k, int64(len(mask))/k)
	}
	pass := &Pass{Train: train, Mask: m}
	if perClient {
		pass.Gens = streams(t, 0, k)
	}
	y := stacked.Forward(s, x, pass)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	r := s.Randn(g, cuda.Float64, cuda.CPU, y.Shape()...)
	params := Tensors(stacked.Params().Trainable())
	grads := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(y, r), false)}, nil, params, cuda.GradOptions{AllowUnused: true})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for c := int64(0); c < k; c++ {
		single, err := build(1, g)
		if err != nil {
			t.Fatal(err)
		}
		s.SetGradEnabled(false)
		for i, p := range single.Params().List {
			s.CopyFrom(p.T, s.Narrow(before[i], 0, c, 1))
		}
		s.SetGradEnabled(true)
		var mc *cuda.Tensor
		if m != nil {
			mc = s.Narrow(m, 0, c, 1)
		}
		pc := &Pass{Train: train, Mask: mc}
		if perClient {
			pc.Gens = streams(t, c, 1)
		}
		yc := single.Forward(s, s.Narrow(x, 0, c, 1), pc)
		gc := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(yc, s.Narrow(r, 0, c, 1)), false)}, nil,
			Tensors(single.Params().Trainable()), cuda.GradOptions{AllowUnused: true})
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		near(t, "output of client "+string(rune('0'+c)), values(t, s, yc), values(t, s, s.Narrow(y, 0, c, 1)))
		for i, p := range single.Params().Trainable() {
			if gc[i] == nil || grads[i] == nil {
				if (gc[i] == nil) != (grads[i] == nil) {
					t.Fatalf("%s: gradient present in one model only", p.Name)
				}
				continue
			}
			near(t, p.Name, values(t, s, gc[i]), values(t, s, s.Narrow(grads[i], 0, c, 1)))
		}
		if train { // running statistics must match too
			for i, p := range single.Params().List {
				if p.Role == RoleNormStats {
					near(t, p.Name, values(t, s, p.T), values(t, s, s.Narrow(stacked.Params().List[i].T, 0, c, 1)))
				}
			}
		}
		single.Close()
	}
}

func values(t *testing.T, s *cuda.Scope, x *cuda.Tensor) []float64 {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > 1e-9+1e-9*math.Abs(want[i]) {
			t.Fatalf("%s[%d] = %.15g, stacked gives %.15g", what, i, got[i], want[i])
		}
	}
}

func images(c, side int64) inputFn {
	return func(s *cuda.Scope, g *cuda.Generator, k int64) *cuda.Tensor {
		return s.Randn(g, cuda.Float64, cuda.CPU, k, 2, c, side, side)
	}
}

func tokens(vocab, t int64) inputFn {
	return func(s *cuda.Scope, g *cuda.Generator, k int64) *cuda.Tensor {
		return s.RandInt(g, 0, vocab, cuda.CPU, k, 2, t)
	}
}

// smallViT is a ViT small enough for float64 gradient checks, with every plug point on.
func smallViT(timm bool) ViTConfig {
	c := ViTConfig{Image: 8, Patch: 4, Channels: 3, Dim: 16, Depth: 2, Heads: 2, HeadDim: 8, MLP: 24,
		Classes: 5, Eps: 1e-5, Dropout: 0.1,
		Prefix: PrefixConfig{Blocks: 1, Mid: 6, Scale: 1.5}, Prompts: 2, MLPAdapter: MLPAdapterConfig{Mid: 4, Scale: 0.5}}
	if timm {
		c.QKVBias, c.ConvStem, c.TimmInit, c.Eps, c.Dropout = true, true, true, 1e-6, 0
	}
	return c
}

// vitWith builds smallViT(true) (timm's layout) changed by edit.
func vitWith(edit func(*ViTConfig)) builder {
	return func(k int, g *cuda.Generator) (Model, error) {
		c := smallViT(true)
		edit(&c)
		return NewViT("small", c, k, cuda.CPU, cuda.Float64, g)
	}
}

func TestMaskedBatchNormStackedEqualsSeparate(t *testing.T) {
	// client 0: both samples real; client 1: one padded slot; client 2: idle
	checkStacked(t, func(k int, g *cuda.Generator) (Model, error) {
		return NewConvNet("convnet-bn", ConvNet(16, 2, 4, true), k, cuda.CPU, cuda.Float64, g)
	}, images(2, 16), true, []float32{1, 1, 1, 0, 0, 0})
	checkStacked(t, func(k int, g *cuda.Generator) (Model, error) {
		return NewResNet("resnet", smallResNet(), k, cuda.CPU, cuda.Float64, g)
	}, images(2, 16), true, []float32{1, 1, 1, 0, 0, 0})
}

func TestDropoutStreamsPerClient(t *testing.T) {
	// training mode with dropout 0.1 everywhere (embedding, attention output, MLP; the text
	// model also on attention probabilities): equal only with per-client streams
	checkStackedGens(t, func(k int, g *cuda.Generator) (Model, error) {
		return NewViT("small", smallViT(false), k, cuda.CPU, cuda.Float64, g)
	}, images(3, 8), true, nil, true)
	checkStackedGens(t, func(k int, g *cuda.Generator) (Model, error) {
		c := TextConfig{Vocab: 11, Dim: 16, FFN: 24, Heads: 2, HeadDim: 8, Depth: 2, SeqLen: 6, MaxLen: 10, Dropout: 0.1, Causal: true}
		return NewTextModel("text", c, k, cuda.CPU, cuda.Float64, g)
	}, tokens(11, 6), true, nil, true)
}

func TestStackedEqualsSeparate(t *testing.T) {
	cases := []struct {
		name  string
		build builder
		input inputFn
		train bool
	}{
		{"vit-lucidrains", func(k int, g *cuda.Generator) (Model, error) {
			return NewViT("small", smallViT(false), k, cuda.CPU, cuda.Float64, g)
		}, images(3, 8), false},
		{"vit-timm", func(k int, g *cuda.Generator) (Model, error) {
			return NewViT("small", smallViT(true), k, cuda.CPU, cuda.Float64, g)
		}, images(3, 8), true},
		{"convnet", func(k int, g *cuda.Generator) (Model, error) {
			return NewConvNet("convnet", ConvNet(16, 2, 4, false), k, cuda.CPU, cuda.Float64, g)
		}, images(2, 16), false},
		{"convnet-bn-train", func(k int, g *cuda.Generator) (Model, error) {
			return NewConvNet("convnet-bn", ConvNet(16, 2, 4, true), k, cuda.CPU, cuda.Float64, g)
		}, images(2, 16), true},
		{"convnet-bn-eval", func(k int, g *cuda.Generator) (Model, error) {
			return NewConvNet("convnet-bn", ConvNet(16, 2, 4, true), k, cuda.CPU, cuda.Float64, g)
		}, images(2, 16), false},
		{"text-transformer", func(k int, g *cuda.Generator) (Model, error) {
			c := TextConfig{Vocab: 11, Dim: 16, FFN: 24, Heads: 2, HeadDim: 8, Depth: 2, SeqLen: 6, MaxLen: 10, Dropout: 0.1, Causal: true}
			return NewTextModel("text", c, k, cuda.CPU, cuda.Float64, g)
		}, tokens(11, 6), false},
		{"focalnet-2-stages", func(k int, g *cuda.Generator) (Model, error) {
			c := FocalNetConfig{Image: 16, Channels: 2, Patch: 4, Dims: []int64{8, 12}, Depths: []int64{1, 1}, Levels: 2, Window: 3, MLPRatio: 2, Classes: 3}
			return NewFocalNet("focal", c, k, cuda.CPU, cuda.Float64, g)
		}, images(2, 16), false},
		{"vit-two-heads", func(k int, g *cuda.Generator) (Model, error) {
			m, err := NewViT("small", smallViT(false), k, cuda.CPU, cuda.Float64, g)
			if err != nil {
				return nil, err
			}
			return NewTwoHeads(m, g)
		}, images(3, 8), false},
		// every prefix (in both blocks, beside the prompts and the MLP adapter of smallViT)
		{"vit-prefix-adapter-concat", vitWith(func(c *ViTConfig) {
			c.Prefix = PrefixConfig{Blocks: 2, Mid: 6, Scale: 1.5, Form: PrefixConcat}
		}), images(3, 8), false},
		{"vit-prefix-adapter-zero", vitWith(func(c *ViTConfig) {
			c.Prefix = PrefixConfig{Blocks: 2, Mid: 6, Init: PrefixInitZero}
		}), images(3, 8), false},
		{"vit-prefix-linear-add-zero", vitWith(func(c *ViTConfig) {
			c.Prefix = PrefixConfig{Blocks: 2, Scale: 1.5, Kind: PrefixLinear, Init: PrefixInitZero}
		}), images(3, 8), false},
		{"vit-prefix-linear-concat", vitWith(func(c *ViTConfig) {
			c.Prefix = PrefixConfig{Blocks: 2, Kind: PrefixLinear, Form: PrefixConcat}
		}), images(3, 8), false},
		{"vit-prefix-tokens", vitWith(func(c *ViTConfig) {
			c.Prefix = PrefixConfig{Blocks: 2, Scale: 0.5, Kind: PrefixTokens, Form: PrefixConcat, Length: 3}
		}), images(3, 8), false},
		{"vit-prefix-tokens-zero", vitWith(func(c *ViTConfig) {
			c.Prefix = PrefixConfig{Blocks: 1, Kind: PrefixTokens, Form: PrefixConcat, Init: PrefixInitZero, Length: 2}
		}), images(3, 8), false},
		{"vit-mlp-adapter-shared", vitWith(func(c *ViTConfig) {
			c.MLPAdapter = MLPAdapterConfig{Mid: 4, Scale: 0.5, Shared: true}
		}), images(3, 8), false},
		{"resnet-train", func(k int, g *cuda.Generator) (Model, error) {
			return NewResNet("resnet", smallResNet(), k, cuda.CPU, cuda.Float64, g)
		}, images(2, 16), true},
		{"resnet-eval", func(k int, g *cuda.Generator) (Model, error) {
			return NewResNet("resnet", smallResNet(), k, cuda.CPU, cuda.Float64, g)
		}, images(2, 16), false},
		{"lstm", func(k int, g *cuda.Generator) (Model, error) {
			return NewLSTM("lstm", LSTMConfig{Vocab: 9, Embed: 4, Hidden: 6, Layers: 2, SeqLen: 5}, k, cuda.CPU, cuda.Float64, g)
		}, tokens(9, 5), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkStackedEqualsSeparate(t, c.build, c.input, c.train) })
	}
}

// TestMaskedBatchNormOneValuePerChannel: a training batch in which a client's BatchNorm
// sees one value per channel (one real sample where the activations are 1×1), beside an
// idle client (no real sample) and a client with two real samples.
//
// In float32, ResNet-50 at 32×32 (layer4 at 1×1) must give finite outputs, gradients and
// running statistics: normalizing the padded rows with a variance of 0 once overflowed
// and the masked sums turned inf·0 into NaN (a non-finite loss in round 1 of a FedAvg run
// with batch 16).
//
// In float64, a small ResNet at 8×8 (layer2 at 1×1) and convnet-bn (whose fully connected
// BatchNorms see one value per channel per sample) must compute for each client what one
// unmasked model on that client's real samples alone computes with PyTorch's batch_norm
// kernel (libtorch's, as pfl's unmasked training path calls it): outputs, gradients and
// running statistics, except the running variance where the kernel has one value per
// channel and stores 0/0 = NaN, which must keep its value instead. The idle client must
// change nothing: zero gradients, running statistics as they were.
func TestMaskedBatchNormOneValuePerChannel(t *testing.T) {
	mask := []float32{1, 0, 0, 0, 1, 1} // client 0: one real sample; 1: idle; 2: two
	real := [][]int64{{0}, nil, {0, 1}}
	const k, b = 3, 2

	t.Run("resnet50-float32", func(t *testing.T) {
		g, _ := cuda.NewGenerator(7, cuda.CPU)
		defer g.Close()
		m, err := Build(Spec{Preset: "resnet50", Classes: 10, Image: 32, Channels: 3}, k, cuda.CPU, cuda.Float32, g)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		s := cuda.NewScope()
		defer s.Close()
		mk := cuda.FromSlice(s, cuda.CPU, mask, k, b)
		y := m.Forward(s, s.Randn(g, cuda.Float32, cuda.CPU, k, b, 3, 32, 32), &Pass{Train: true, Mask: mk})
		r := s.Mul(s.Randn(g, cuda.Float32, cuda.CPU, y.Shape()...), s.Reshape(mk, k, b, 1))
		params := m.Params().Trainable()
		grads := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(y, r), false)}, nil, Tensors(params), cuda.GradOptions{})
		finite(t, "logits", values(t, s, y))
		for i, p := range params {
			finite(t, "gradient of "+p.Name, values(t, s, grads[i]))
		}
		for _, p := range m.Params().List {
			if p.Role == RoleNormStats {
				finite(t, p.Name, values(t, s, p.T))
			}
		}
	})

	smallRes := smallResNet()
	smallRes.Image = 8 // 8 -> stem 4 -> max-pool 2 -> layer1 2×2 -> layer2 1×1
	for _, c := range []struct {
		name  string
		build builder
		image int64
		kept  int // client 0's running variances with one value per channel
	}{
		// layer2.0's bn2, bn3 and downsample, and layer2.1's three BatchNorms
		// (layer2.0.bn1 still sees its 2×2 input)
		{"small-resnet-vs-kernel", func(k int, g *cuda.Generator) (Model, error) {
			return NewResNet("resnet", smallRes, k, cuda.CPU, cuda.Float64, g)
		}, 8, 6},
		// the two BatchNorms of the fully connected layers (FedBN's CNN)
		{"convnet-bn-vs-kernel", func(k int, g *cuda.Generator) (Model, error) {
			return NewConvNet("convnet-bn", ConvNet(16, 2, 4, true), k, cuda.CPU, cuda.Float64, g)
		}, 16, 2},
	} {
		t.Run(c.name, func(t *testing.T) { checkOneValuePerChannel(t, c.build, c.image, mask, real, c.kept) })
	}
}

// checkOneValuePerChannel compares a masked stacked training pass of 3 clients (2 images
// of 2 channels each) with, for each client, one unmasked model on its real samples
// alone: PyTorch's batch_norm kernel. A client without real samples must change nothing.
func checkOneValuePerChannel(t *testing.T, build builder, image int64, mask []float32, real [][]int64, wantKept int) {
	const k, b = 3, 2
	g, _ := cuda.NewGenerator(8, cuda.CPU)
	defer g.Close()
	stacked, err := build(k, g)
	if err != nil {
		t.Fatal(err)
	}
	defer stacked.Close()
	s := cuda.NewScope()
	defer s.Close()
	s.SetGradEnabled(false)
	for _, p := range stacked.Params().List { // rows differ, running statistics too
		noise := s.MulScalar(s.Randn(g, cuda.Float64, cuda.CPU, p.T.Shape()...), 0.05)
		if p.Role == RoleNormStats { // a variance stays positive
			noise = s.MulScalar(s.Rand(g, cuda.Float64, cuda.CPU, p.T.Shape()...), 0.5)
		}
		s.CopyFrom(p.T, s.Add(p.T, noise))
	}
	before := make([]*cuda.Tensor, len(stacked.Params().List))
	for i, p := range stacked.Params().List {
		before[i] = s.Clone(p.T)
	}
	s.SetGradEnabled(true)
	x := s.Randn(g, cuda.Float64, cuda.CPU, k, b, 2, image, image)
	mk := cuda.FromSlice(s, cuda.CPU, mask, k, b)
	y := stacked.Forward(s, x, &Pass{Train: true, Mask: mk})
	r := s.Mul(s.Randn(g, cuda.Float64, cuda.CPU, y.Shape()...), s.Reshape(s.To(mk, cuda.Float64), k, b, 1))
	grads := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(y, r), false)}, nil, Tensors(stacked.Params().Trainable()), cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	kept := 0 // running variances the kernel leaves NaN
	for c := int64(0); c < k; c++ {
		name := "client " + string(rune('0'+c))
		if real[c] == nil {
			finite(t, name+" logits", values(t, s, s.Narrow(y, 0, c, 1)))
			for i, p := range stacked.Params().Trainable() {
				near(t, name+" gradient of "+p.Name, values(t, s, s.Narrow(grads[i], 0, c, 1)), make([]float64, p.Numel()))
			}
			for i, p := range stacked.Params().List {
				if p.Role == RoleNormStats {
					near(t, name+" "+p.Name, values(t, s, s.Narrow(p.T, 0, c, 1)), values(t, s, s.Narrow(before[i], 0, c, 1)))
				}
			}
			continue
		}
		single, err := build(1, g)
		if err != nil {
			t.Fatal(err)
		}
		s.SetGradEnabled(false)
		for i, p := range single.Params().List {
			s.CopyFrom(p.T, s.Narrow(before[i], 0, c, 1))
		}
		s.SetGradEnabled(true)
		idx := cuda.FromSlice(s, cuda.CPU, real[c], int64(len(real[c])))
		pick := func(t *cuda.Tensor) *cuda.Tensor { return s.IndexSelect(s.Narrow(t, 0, c, 1), 1, idx) }
		yc := single.Forward(s, pick(x), &Pass{Train: true}) // no mask: the batch_norm kernel
		gc := s.Grad([]*cuda.Tensor{s.Sum(s.Mul(yc, pick(r)), false)}, nil, Tensors(single.Params().Trainable()), cuda.GradOptions{})
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		near(t, name+" logits", values(t, s, yc), values(t, s, pick(y)))
		for i, p := range single.Params().Trainable() {
			near(t, name+" gradient of "+p.Name, values(t, s, gc[i]), values(t, s, s.Narrow(grads[i], 0, c, 1)))
		}
		for i, p := range single.Params().List {
			if p.Role != RoleNormStats {
				continue
			}
			want, got := values(t, s, p.T), values(t, s, s.Narrow(stacked.Params().List[i].T, 0, c, 1))
			if math.IsNaN(want[0]) { // the kernel's 0/0: the value must stay
				if !strings.HasSuffix(p.Name, "running_var") {
					t.Fatalf("%s %s: the kernel gives NaN", name, p.Name)
				}
				want = values(t, s, s.Narrow(before[i], 0, c, 1))
				kept++
			}
			near(t, name+" "+p.Name, want, got)
		}
		single.Close()
	}
	if kept != wantKept {
		t.Fatalf("%d running variances with one value per channel, want %d", kept, wantKept)
	}
}

// finite fails unless every value is finite.
func finite(t *testing.T, what string, v []float64) {
	t.Helper()
	for i, f := range v {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("%s[%d] = %v", what, i, f)
		}
	}
}
