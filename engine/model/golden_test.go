package model_test

import (
	"strconv"
	"strings"
	"testing"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
	"pfl/internal/golden"
)

// goldenTol bounds pfl against PyTorch in float64. Both compute the same sums in possibly
// different orders and with different kernels (erf, exp, rsqrt, grouped against plain
// convolutions): a sum of n terms differs by at most n·u and typically √n·u of its scale,
// u = 2^-53 ≈ 1.1e-16, n ≤ 800 (the ConvNet's fc1; 48 in the ViT), amplified by the
// computation's condition κ ≲ 10^3 (two blocks, softmax, LayerNorm, the loss' backward
// pass): typically √800·u·10^3 ≈ 3e-12 of the values' scale. 1e-10 leaves a margin of 30
// and is still 10^5 times smaller than what a wrong layout, constant or missing term gives
// (GELU's tanh form moves the ViT's logits by 1.7e-5; a swapped q and k or a LayerNorm eps
// of 1e-6 by more).
const goldenTol = 1e-10

// goldenRow is the client row that holds the golden model; the other rows hold other
// weights and inputs, so the test also shows that stacking keeps clients apart.
const goldenRow = 1

// stack is a k-client model whose row goldenRow holds a golden file's weights.
type stack struct {
	t       *testing.T
	g       *golden.File
	m       model.Model
	s       *cuda.Scope
	gen     *cuda.Generator
	k       int
	classes int64          // label range (the vocabulary for text)
	params  []*cuda.Tensor // the trainable parameters' tensors
	trained []*model.Param
}

func newStack(t *testing.T, g *golden.File, spec model.Spec, k int) *stack {
	f, err := spec.Builder()
	if err != nil {
		t.Fatal(err)
	}
	classes := spec.Classes
	if spec.Vocab != 0 {
		classes = spec.Vocab
	}
	return newStackOf(t, g, model.Factory(f), k, classes)
}

// newStackOf is newStack for a model built by f, with labels in [0, classes): the golden
// sizes of FocalNet and the LSTM are below what a Spec sets (stage widths, hidden size).
func newStackOf(t *testing.T, g *golden.File, f model.Factory, k int, classes int64) *stack {
	gen, _ := cuda.NewGenerator(7, cuda.CPU)
	t.Cleanup(func() { gen.Close() })
	m, err := f(k, cuda.CPU, cuda.Float64, gen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := cuda.NewScope()
	t.Cleanup(func() { s.Close() })
	s.SetGradEnabled(false)
	st := &stack{t: t, g: g, m: m, s: s, gen: gen, k: k, classes: classes}
	for _, p := range m.Params().List {
		v, shape := g.Values("w/" + p.Name)
		s.CopyFrom(s.Narrow(p.T, 0, goldenRow, 1), cuda.FromSlice(s, cuda.CPU, v, append([]int64{1}, shape...)...))
		if !p.Buffer {
			st.params = append(st.params, p.T)
			st.trained = append(st.trained, p)
		}
	}
	s.SetGradEnabled(true)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return st
}

// batch stacks the golden inputs and labels in row goldenRow; the other clients get their
// own random images and labels.
func (st *stack) batch(xName, yName string) (x, y *cuda.Tensor) {
	s := st.s
	xv, xs := st.g.Values(xName)
	yv := st.g.Int64s(yName)
	var xr, yr []*cuda.Tensor
	shift := func(v []int64, by int) []int64 { // another client's ids or labels
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = (x + int64(by+i)) % st.classes
		}
		return out
	}
	ys := []int64{int64(len(yv))}
	if _, shape := st.g.Values(yName); len(shape) > 1 {
		ys = shape
	}
	for row := 0; row < st.k; row++ {
		switch {
		case row == goldenRow && st.g.IsInt(xName):
			xr = append(xr, cuda.FromSlice(s, cuda.CPU, st.g.Int64s(xName), xs...))
		case row == goldenRow:
			xr = append(xr, cuda.FromSlice(s, cuda.CPU, xv, xs...))
		case st.g.IsInt(xName):
			xr = append(xr, cuda.FromSlice(s, cuda.CPU, shift(st.g.Int64s(xName), row), xs...))
		default:
			r := s.Zeros(cuda.Float64, cuda.CPU, xs...)
			s.FillNormal(st.gen, r, 0, 1)
			xr = append(xr, r)
		}
		if row == goldenRow {
			yr = append(yr, cuda.FromSlice(s, cuda.CPU, yv, ys...))
		} else {
			yr = append(yr, cuda.FromSlice(s, cuda.CPU, shift(yv, row), ys...))
		}
	}
	return s.Stack(0, xr...), s.Stack(0, yr...)
}

// loss is each client's mean cross-entropy [K] and their sum, whose gradient in row
// goldenRow is that client's own.
func (st *stack) loss(x, y *cuda.Tensor) (perClient, total *cuda.Tensor) {
	return st.lossOf(st.m.Forward(st.s, x, &model.Pass{}), y)
}

// lossOf is loss for logits [K, B, classes] already computed.
func (st *stack) lossOf(logits, y *cuda.Tensor) (perClient, total *cuda.Tensor) {
	s := st.s
	c := logits.Size(-1)
	per := s.Reshape(s.CrossEntropy(s.Reshape(logits, -1, c), s.Reshape(y, -1), nil, cuda.ReduceNone, 0), int64(st.k), -1)
	perClient = s.Mean(per, false, 1)
	return perClient, s.Sum(perClient, false)
}

// matchForwardBackward compares the logits, the loss and every parameter's gradient of row
// goldenRow with PyTorch's.
func (st *stack) matchForwardBackward() {
	s, g := st.s, st.g
	x, y := st.batch("x", "y")
	g.Close("logits", s.Select(st.m.Forward(s, x, &model.Pass{}), 0, goldenRow), "logits", goldenTol)
	perClient, total := st.loss(x, y)
	g.Close("loss", s.Narrow(perClient, 0, goldenRow, 1), "loss", goldenTol)
	grads := s.Grad([]*cuda.Tensor{total}, nil, st.params, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		st.t.Fatal(err)
	}
	for i, p := range st.trained {
		g.Close("grad "+p.Name, s.Select(grads[i], 0, goldenRow), "grad/"+p.Name, goldenTol)
	}
}

// sameParams checks that pfl's model has exactly the golden model's parameters, by name
// (timm's names for the ViTs): a parameter pfl lacks, or one it adds, fails here even where
// its values would not move the outputs.
func (st *stack) sameParams() {
	st.t.Helper()
	want := map[string]bool{}
	for _, n := range st.g.Names("w/") {
		want[n] = true
	}
	for _, p := range st.m.Params().List {
		if !want[p.Name] {
			st.t.Errorf("pfl has %s, the golden model does not", p.Name)
		}
		delete(want, p.Name)
	}
	for n := range want {
		st.t.Errorf("the golden model has %s, pfl does not", n)
	}
}

func metaInt(t *testing.T, g *golden.File, key string) int64 {
	v, err := strconv.ParseInt(g.Metadata(key), 10, 64)
	if err != nil {
		t.Fatalf("golden metadata %s: %v", key, err)
	}
	return v
}

// metaInts reads a comma-separated list of integers from the golden metadata.
func metaInts(t *testing.T, g *golden.File, key string) []int64 {
	var out []int64
	for _, f := range strings.Split(g.Metadata(key), ",") {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("golden metadata %s: %v", key, err)
		}
		out = append(out, v)
	}
	return out
}

// TestTinyViTMatchesPyTorch: FedTP's tiny ViT (lucidrains layout) written in PyTorch by
// scripts/golden/gen.py and pfl's tiny-vit preset, with the same weights in row 1 of a
// 3-client stack, give the same logits, loss, gradients of every parameter, and the same
// weights after three steps of torch.optim.SGD (momentum 0.9, weight decay 1e-5).
func TestTinyViTMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/tiny_vit.safetensors")
	n := func(k string) int64 { return metaInt(t, g, k) }
	none := 0.0
	spec := model.Spec{Preset: "tiny-vit", Image: n("image"), Patch: n("patch"), Channels: n("channels"),
		Dim: n("dim"), Depth: n("depth"), Heads: n("heads"), HeadDim: n("dim_head"), MLP: n("mlp"),
		Classes: n("classes"), Dropout: &none}
	st := newStack(t, g, spec, 3)
	st.matchForwardBackward()

	// a local epoch: three steps of pfl's SGD on fixed batches
	s := st.s
	opt := fl.NewSGD(fl.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-5})
	defer opt.Close()
	active := cuda.FromSlice(s, cuda.CPU, []float32{1, 1, 1})
	for i := 0; i < 3; i++ {
		bx, by := st.batch("epoch/x"+strconv.Itoa(i), "epoch/y"+strconv.Itoa(i))
		_, l := st.loss(bx, by)
		opt.Step(s, st.params, s.Grad([]*cuda.Tensor{l}, nil, st.params, cuda.GradOptions{}), active)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.m.Params().List {
		g.Close("after the epoch "+p.Name, s.Select(p.T, 0, goldenRow), "epoch/w/"+p.Name, goldenTol)
	}
}

// TestConvNetMatchesPyTorch: pFedHN's ConvNet (FedTP's CNN baseline) in PyTorch and pfl's
// convnet preset give the same logits, loss and gradients (grouped convolutions over the
// stacked clients against plain ones).
func TestConvNetMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/convnet.safetensors")
	spec := model.Spec{Preset: "convnet", Image: metaInt(t, g, "image"), Channels: metaInt(t, g, "channels"),
		Classes: metaInt(t, g, "classes")}
	newStack(t, g, spec, 3).matchForwardBackward()
}

// TestTextTransformerMatchesPyTorch: FedTP's Shakespeare Transformer (post-norm layers,
// separate Q/K/V projections, scaled output) with pfl's causal mask, in PyTorch and as
// pfl's text-transformer preset, give the same logits, loss and gradients.
func TestTextTransformerMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/text_transformer.safetensors")
	n := func(k string) int64 { return metaInt(t, g, k) }
	none := 0.0
	spec := model.Spec{Preset: "text-transformer", Vocab: n("vocab"), SeqLen: n("seq_len"), Dim: n("dim"), MLP: n("ffn"),
		Heads: n("heads"), HeadDim: n("dim_head"), Depth: n("depth"), Dropout: &none}
	newStack(t, g, spec, 3).matchForwardBackward()
}

// TestPerfixViTMatchesPyTorch: timm 0.6.7's own ViT (vit_small_patch16_224's builder at a
// small size: Conv2d stem, biased fused qkv, LayerNorm eps 1e-6, final norm before the class
// token's head) with the FedPerfix code's own AdapterAttention in its last block only
// (qkv(x) + 1.5·[0, ΔK, ΔV], ΔK‖ΔV = up(tanh(down(norm1(x))))), run by
// scripts/golden/gen.py from their checkouts, and pfl's vit-s16-perfix preset at that size
// have the same parameters and give the same logits, loss and gradients, the adapter's
// included.
func TestPerfixViTMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/perfix_vit.safetensors")
	n := func(k string) int64 { return metaInt(t, g, k) }
	scale, err := strconv.ParseFloat(g.Metadata("scale"), 64)
	if err != nil {
		t.Fatal(err)
	}
	dim, heads := n("dim"), n("heads")
	spec := model.Spec{Preset: "vit-s16-perfix", Image: n("image"), Patch: n("patch"), Channels: n("channels"),
		Dim: dim, Depth: n("depth"), Heads: heads, HeadDim: dim / heads, MLP: n("mlp"), Classes: n("classes"),
		Prefix: model.PrefixConfig{Blocks: n("prefix_blocks"), Mid: n("mid"), Scale: scale}}
	st := newStack(t, g, spec, 3)
	st.sameParams()
	st.matchForwardBackward()
}

// TestPerfixVariantsMatchPyTorch: the other prefixes of PrefixConfig, in both blocks of the
// same small timm ViT (scripts/golden/gen.py) and built by pfl, have the same parameters and
// give the same logits, loss and gradients: the FedPerfix code's own vanilla Linear prefix
// added to K and V (its VanillaPrefix in AdapterAttention), zero-initialized (Prefix-Z: its
// gradients are those of a model without the prefix on everything else) and randomly
// initialized (Prefix-R); and the paper's forms the FedPerfix code lacks, written in gen.py
// around timm's Attention: the code's Adapter concatenated as extra keys and values (Eq. 4,
// 5) and learnable prefix tokens (Eq. 3).
func TestPerfixVariantsMatchPyTorch(t *testing.T) {
	for _, name := range []string{"perfix_concat", "perfix_linear_zero", "perfix_linear_random", "perfix_tokens"} {
		t.Run(name, func(t *testing.T) {
			g := golden.Open(t, "testdata/golden/"+name+".safetensors")
			n := func(k string) int64 { return metaInt(t, g, k) }
			scale, err := strconv.ParseFloat(g.Metadata("scale"), 64)
			if err != nil {
				t.Fatal(err)
			}
			dim, heads := n("dim"), n("heads")
			spec := model.Spec{Preset: "vit-s16", Image: n("image"), Patch: n("patch"), Channels: n("channels"),
				Dim: dim, Depth: n("depth"), Heads: heads, HeadDim: dim / heads, MLP: n("mlp"), Classes: n("classes"),
				Prefix: model.PrefixConfig{Blocks: n("prefix_blocks"), Mid: n("mid"), Scale: scale,
					Kind: model.PrefixKind(g.Metadata("kind")), Form: model.PrefixForm(g.Metadata("form")),
					Init: model.PrefixInit(g.Metadata("init")), Length: n("length")}}
			st := newStack(t, g, spec, 3)
			st.sameParams()
			st.matchForwardBackward()
		})
	}
}

// TestFocalNetMatchesPyTorch: microsoft/FocalNet's layout in PyTorch (two stages with the
// 2×2 downsampler between them, three focal levels: kernels 3, 5 and 7 over 4×4 and 2×2
// maps) and pfl's FocalNet give the same logits, loss and gradients.
func TestFocalNetMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/focalnet.safetensors")
	n := func(k string) int64 { return metaInt(t, g, k) }
	list := func(k string) []int64 { return metaInts(t, g, k) }
	c := model.FocalNetConfig{Image: n("image"), Patch: n("patch"), Channels: n("channels"), Dims: list("dims"),
		Depths: list("depths"), Levels: n("levels"), Window: n("window"), MLPRatio: n("mlp_ratio"), Classes: n("classes")}
	f := func(k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (model.Model, error) {
		return model.NewFocalNet("focalnet-golden", c, k, dev, dt, gen)
	}
	newStackOf(t, g, f, 3, c.Classes).matchForwardBackward()
}

// TestLSTMMatchesPyTorch: the next-character LSTM as torch.nn.LSTM computes it (gate order
// i, f, g, o; both biases) and pfl's step-by-step recurrence give the same logits, loss and
// gradients through every time step of both layers.
func TestLSTMMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/lstm.safetensors")
	n := func(k string) int64 { return metaInt(t, g, k) }
	c := model.LSTMConfig{Vocab: n("vocab"), Embed: n("embed"), Hidden: n("hidden"), Layers: n("layers"), SeqLen: n("seq_len")}
	f := func(k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (model.Model, error) {
		return model.NewLSTM("lstm-golden", c, k, dev, dt, gen)
	}
	newStackOf(t, g, f, 3, c.Vocab).matchForwardBackward()
}

// TestResNetMatchesPyTorch: torchvision's Bottleneck ResNet written in PyTorch by
// scripts/golden/gen.py (checked there against torchvision's resnet50 itself: names,
// shapes, outputs and running statistics) at a small size — stem width 4, two stages of
// widths 4 and 8 with 1 and 2 blocks, so a stride-1 projection shortcut, a stride-2 one and
// an identity, on 16×16 images, BatchNorm affines and running statistics away from 1 and 0
// — and pfl's ResNet, with the same weights and statistics in row 1 of a 3-client stack,
// give in training mode (batch statistics) the same logits, loss and gradient of every
// parameter and leave the same running statistics (momentum 0.1, unbiased variance); then
// in evaluation mode, on those statistics, the same logits.
//
// goldenTol holds here as derived above: the longest sums are BatchNorm's statistics over
// B·H·W ≤ 4·8·8 = 256 values (the stem's) and the stem's 7·7·3 = 147-term convolution,
// √256·u·10³ ≈ 2e-12 with the same allowance for the condition (train-mode BatchNorm's
// backward subtracts the mean gradient and its projection on the normalized values). On a
// CPU with Debian's libtorch under both, the two agree exactly: a grouped convolution
// computes each group as a plain one. Scaling the shortcuts by 1 + 1e-9 moves
// the logits and gradients by 1e-9, and a momentum of 0.2 the statistics by 0.1: both fail.
func TestResNetMatchesPyTorch(t *testing.T) {
	g := golden.Open(t, "testdata/golden/resnet.safetensors")
	n := func(k string) int64 { return metaInt(t, g, k) }
	c := model.ResNetConfig{Image: n("image"), Channels: n("channels"), Stem: n("stem"), Widths: metaInts(t, g, "widths"),
		Blocks: metaInts(t, g, "blocks"), Classes: n("classes")}
	f := func(k int, dev cuda.Device, dt cuda.DType, gen *cuda.Generator) (model.Model, error) {
		return model.NewResNet("resnet-golden", c, k, dev, dt, gen)
	}
	st := newStackOf(t, g, f, 3, c.Classes)
	s := st.s
	x, y := st.batch("x", "y")
	logits := st.m.Forward(s, x, &model.Pass{Train: true}) // one pass: it moves the statistics
	g.Close("logits", s.Select(logits, 0, goldenRow), "logits", goldenTol)
	perClient, total := st.lossOf(logits, y)
	g.Close("loss", s.Narrow(perClient, 0, goldenRow, 1), "loss", goldenTol)
	grads := s.Grad([]*cuda.Tensor{total}, nil, st.params, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, p := range st.trained {
		g.Close("grad "+p.Name, s.Select(grads[i], 0, goldenRow), "grad/"+p.Name, goldenTol)
	}
	stats := 0
	for _, p := range st.m.Params().List {
		if p.Buffer {
			g.Close("after the pass "+p.Name, s.Select(p.T, 0, goldenRow), "stats/"+p.Name, goldenTol)
			stats++
		}
	}
	// 12 BatchNorms, a mean and a variance each: the stem's, layer1.0's three and its
	// shortcut's, layer2.0's likewise, and layer2.1's three
	if stats != 24 {
		t.Fatalf("%d running statistics compared, want 24", stats)
	}
	g.Close("eval logits", s.Select(st.m.Forward(s, x, &model.Pass{}), 0, goldenRow), "eval_logits", goldenTol)
}
