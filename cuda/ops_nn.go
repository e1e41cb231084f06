package cuda

import "math"

// Conv2dOptions are the geometry of a 2-D convolution; zero values mean stride 1,
// padding 0, dilation 1, groups 1.
type Conv2dOptions struct {
	Stride, Padding, Dilation [2]int64
	Groups                    int64
}

// Conv2d convolves x [N, C, H, W] with w [O, C/groups, kh, kw] (+ b [O], may be nil).
// Grouped convolution with K·C groups is how a client-stacked model runs K clients' convs
// in one call.
func (s *Scope) Conv2d(x, w, b *Tensor, o Conv2dOptions) *Tensor {
	const op = "conv2d"
	if !s.args(op, []*Tensor{x, w}, b) || !s.checkSameDType(op, x, w, b) ||
		!s.checkRank(op, "input", x, 4) || !s.checkRank(op, "weight", w, 4) {
		return nil
	}
	if o.Stride == [2]int64{} {
		o.Stride = [2]int64{1, 1}
	}
	if o.Dilation == [2]int64{} {
		o.Dilation = [2]int64{1, 1}
	}
	if o.Groups == 0 {
		o.Groups = 1
	}
	if x.shape[1] != w.shape[1]*o.Groups || w.shape[0]%o.Groups != 0 {
		return s.failf(op, CodeShape, "input %v, weight %v and %d groups do not fit", x.shape, w.shape, o.Groups)
	}
	if b != nil && (b.Dim() != 1 || b.shape[0] != w.shape[0]) {
		return s.failf(op, CodeShape, "bias %v does not fit weight %v", b.shape, w.shape)
	}
	s.ints(o.Stride[0], o.Stride[1], o.Padding[0], o.Padding[1], o.Dilation[0], o.Dilation[1], o.Groups)
	return s.run1(op, opConv2d, nil)
}

func (s *Scope) pool(op string, code int32, x *Tensor, kernel, stride, padding [2]int64) *Tensor {
	if !s.args(op, []*Tensor{x}) || !s.checkRank(op, "input", x, 3, 4) {
		return nil
	}
	if stride == [2]int64{} {
		stride = kernel
	}
	s.ints(kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1])
	return s.run1(op, code, nil)
}

// MaxPool2d is max pooling of x [N, C, H, W]; a zero stride means the kernel size.
func (s *Scope) MaxPool2d(x *Tensor, kernel, stride, padding [2]int64) *Tensor {
	return s.pool("max_pool2d", opMaxPool2d, x, kernel, stride, padding)
}

// AvgPool2d is average pooling of x [N, C, H, W]; a zero stride means the kernel size.
func (s *Scope) AvgPool2d(x *Tensor, kernel, stride, padding [2]int64) *Tensor {
	return s.pool("avg_pool2d", opAvgPool2d, x, kernel, stride, padding)
}

// AdaptiveAvgPool2d averages x [N, C, H, W] to [N, C, oh, ow].
func (s *Scope) AdaptiveAvgPool2d(x *Tensor, oh, ow int64) *Tensor {
	if !s.args("adaptive_avg_pool2d", []*Tensor{x}) || !s.checkRank("adaptive_avg_pool2d", "input", x, 3, 4) {
		return nil
	}
	s.ints(oh, ow)
	return s.run1("adaptive_avg_pool2d", opAdaptiveAvg, nil)
}

// LayerNorm normalizes x over its last nDims dims, then applies y*w + b with
// broadcasting (w and b may be nil). w, b of shape [D] are one affine; [K, 1, ..., D]
// gives each client row of a stacked model its own.
func (s *Scope) LayerNorm(x, w, b *Tensor, nDims int, eps float64) *Tensor {
	const op = "layer_norm"
	if !s.args(op, []*Tensor{x}, w, b) || !s.checkFloat(op, "input", x) {
		return nil
	}
	if nDims < 1 || nDims > x.Dim() {
		return s.failf(op, CodeShape, "cannot normalize %d dims of %v", nDims, x.shape)
	}
	for _, p := range []*Tensor{w, b} {
		if p == nil {
			continue
		}
		if bs, ok := broadcast(x.shape, p.shape); !ok || len(bs) != x.Dim() {
			return s.failf(op, CodeShape, "affine %v does not broadcast to input %v", p.shape, x.shape)
		}
	}
	s.ints(int64(nDims))
	s.dbls(eps)
	return s.run1(op, opLayerNorm, nil)
}

// BatchNorm normalizes x [N, C, ...] per channel: with batch statistics when training
// (updating runMean and runVar in place with momentum, if given), else with runMean and
// runVar. w, b, runMean, runVar ([C]) may be nil.
func (s *Scope) BatchNorm(x, w, b, runMean, runVar *Tensor, training bool, momentum, eps float64) *Tensor {
	const op = "batch_norm"
	if !s.args(op, []*Tensor{x}, w, b, runMean, runVar) {
		return nil
	}
	if x.Dim() < 2 {
		return s.failf(op, CodeShape, "input %v has no channel dim", x.shape)
	}
	for _, p := range []*Tensor{w, b, runMean, runVar} {
		if p != nil && (p.Dim() != 1 || p.shape[0] != x.shape[1]) {
			return s.failf(op, CodeShape, "per-channel tensor %v does not fit input %v", p.shape, x.shape)
		}
	}
	if !training && (runMean == nil || runVar == nil) {
		return s.failf(op, CodeArgument, "evaluation needs running mean and variance")
	}
	s.ints(b2i(training))
	s.dbls(momentum, eps)
	return s.run1(op, opBatchNorm, nil)
}

func (s *Scope) alongDim(op string, code int32, x *Tensor, dim int) *Tensor {
	if !s.args(op, []*Tensor{x}) {
		return nil
	}
	if _, ok := s.checkDim(op, x, dim); !ok {
		return nil
	}
	s.ints(int64(dim))
	return s.run1(op, code, nil)
}

// Softmax is exp(x)/sum(exp(x)) along dim.
func (s *Scope) Softmax(x *Tensor, dim int) *Tensor { return s.alongDim("softmax", opSoftmax, x, dim) }

// LogSoftmax is log(Softmax(x, dim)), computed stably.
func (s *Scope) LogSoftmax(x *Tensor, dim int) *Tensor {
	return s.alongDim("log_softmax", opLogSoftmax, x, dim)
}

// GELU is x·Φ(x); tanhApprox selects the tanh approximation.
func (s *Scope) GELU(x *Tensor, tanhApprox bool) *Tensor {
	if !s.args("gelu", []*Tensor{x}) {
		return nil
	}
	s.ints(b2i(tanhApprox))
	return s.run1("gelu", opGelu, nil)
}

// ReLU is max(x, 0).
func (s *Scope) ReLU(x *Tensor) *Tensor { return s.unary("relu", opRelu, x) }

// Tanh is tanh(x).
func (s *Scope) Tanh(x *Tensor) *Tensor { return s.unary("tanh", opTanh, x) }

// Sigmoid is 1/(1+e^-x).
func (s *Scope) Sigmoid(x *Tensor) *Tensor { return s.unary("sigmoid", opSigmoid, x) }

// Dropout zeroes each element of x with probability p, drawn from gen, and scales the
// rest by 1/(1-p); without train it returns x unchanged. The explicit generator keeps
// every run reproducible from its (seed, purpose, round, client) stream.
func (s *Scope) Dropout(gen *Generator, x *Tensor, p float64, train bool) *Tensor {
	const op = "dropout"
	if !s.args(op, []*Tensor{x}) {
		return nil
	}
	if p < 0 || p >= 1 {
		return s.failf(op, CodeArgument, "p = %g, want [0, 1)", p)
	}
	if train && p > 0 && (gen == nil || gen.dev != x.device) {
		return s.failf(op, CodeArgument, "need a generator on %s", x.device)
	}
	s.ints(b2i(train))
	s.dbls(p)
	return s.run1(op, opDropout, gen)
}

// Reduction selects how per-sample losses combine.
type Reduction int64

// Reductions of CrossEntropy.
const (
	ReduceNone Reduction = 0 // per sample
	ReduceMean Reduction = 1 // Σ w_i l_i / Σ w_i (plain mean without weights)
	ReduceSum  Reduction = 2 // Σ w_i l_i
)

// CrossEntropy is the softmax cross-entropy of logits [N, C] against target [N] (int64),
// with optional per-sample weights [N] (e.g. masks of padded samples in a stacked batch)
// and label smoothing as in torch.
func (s *Scope) CrossEntropy(logits, target, weight *Tensor, red Reduction, smoothing float64) *Tensor {
	const op = "cross_entropy"
	if !s.args(op, []*Tensor{logits, target}, weight) || !s.checkFloat(op, "logits", logits) ||
		!s.checkDType(op, "target", target, Int64) || !s.checkRank(op, "logits", logits, 2) ||
		!s.checkRank(op, "target", target, 1) {
		return nil
	}
	if target.shape[0] != logits.shape[0] {
		return s.failf(op, CodeShape, "logits %v and target %v differ in batch size", logits.shape, target.shape)
	}
	if weight != nil && (weight.Dim() != 1 || weight.shape[0] != logits.shape[0]) {
		return s.failf(op, CodeShape, "weight %v does not fit logits %v", weight.shape, logits.shape)
	}
	if red < ReduceNone || red > ReduceSum {
		return s.failf(op, CodeArgument, "unknown reduction %d", red)
	}
	s.ints(int64(red))
	s.dbls(smoothing)
	return s.run1(op, opCrossEnt, nil)
}

// Embedding looks up rows of weight [V, D] at index (int64, any shape): [..., D].
func (s *Scope) Embedding(weight, index *Tensor) *Tensor {
	const op = "embedding"
	if !s.args(op, []*Tensor{weight, index}) || !s.checkDType(op, "index", index, Int64) ||
		!s.checkRank(op, "weight", weight, 2) {
		return nil
	}
	return s.run1(op, opEmbedding, nil)
}

// AttentionOptions configure SDPA. Zero values: no causal mask, scale 1/sqrt(E), no
// dropout.
type AttentionOptions struct {
	Causal   bool
	Scale    float64    // 0: 1/sqrt(E)
	DropoutP float64    // attention-weight dropout; needs Gen
	Gen      *Generator // the stream dropout draws from
}

// SDPA is scaled dot-product attention softmax(q kᵀ·scale + mask) v for q [..., L, E],
// k [..., S, E], v [..., S, Ev]; mask (may be nil) broadcasts to [..., L, S] and is bool
// (true = attend) or additive. On torch >= 2.0 without dropout it runs libtorch's fused
// kernels; otherwise an exact math version.
func (s *Scope) SDPA(q, k, v, mask *Tensor, o AttentionOptions) *Tensor {
	const op = "sdpa"
	if !s.args(op, []*Tensor{q, k, v}, mask) || !s.checkSameDType(op, q, k, v) || !s.checkFloat(op, "q", q) {
		return nil
	}
	if q.Dim() < 2 || k.Dim() != q.Dim() || v.Dim() != q.Dim() || q.Size(-1) != k.Size(-1) || k.Size(-2) != v.Size(-2) {
		return s.failf(op, CodeShape, "q %v, k %v, v %v do not fit", q.shape, k.shape, v.shape)
	}
	if mask != nil {
		want := append(append([]int64(nil), q.shape[:q.Dim()-1]...), k.Size(-2))
		if bs, ok := broadcast(want, mask.shape); !ok || len(bs) != len(want) {
			return s.failf(op, CodeShape, "mask %v does not broadcast to %v", mask.shape, want)
		}
	}
	if o.DropoutP < 0 || o.DropoutP >= 1 {
		return s.failf(op, CodeArgument, "dropout p = %g, want [0, 1)", o.DropoutP)
	}
	if o.DropoutP > 0 && (o.Gen == nil || o.Gen.dev != q.device) {
		return s.failf(op, CodeArgument, "dropout needs a generator on %s", q.device)
	}
	hasScale := o.Scale != 0 && !math.IsNaN(o.Scale)
	s.ints(b2i(o.Causal), b2i(hasScale))
	s.dbls(o.DropoutP, o.Scale)
	return s.run1(op, opSDPA, o.Gen)
}
