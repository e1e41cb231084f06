package model

import (
	"fmt"
	"math"

	"pfl/cuda"
)

// Client-stacked layers. Dimension letters: K clients, B batch, T tokens, D features,
// C channels, H and W image height and width.

// linear is x W^T + b per client: x [K, ..., in], w [K, out, in], b [K, out] (or nil) ->
// [K, ..., out], as one batched matmul (with the bias fused in by BAddBMM).
func linear(s *cuda.Scope, x, w, b *cuda.Tensor) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	shape := x.Shape()
	k, in, out := shape[0], shape[len(shape)-1], w.Size(-2)
	x2 := s.Reshape(x, k, -1, in)
	wt := s.Transpose(w, 1, 2)
	var y *cuda.Tensor
	if b != nil {
		y = s.BAddBMM(s.Unsqueeze(b, 1), x2, wt, 1, 1)
	} else {
		y = s.BMM(x2, wt)
	}
	shape[len(shape)-1] = out
	return s.Reshape(y, shape...)
}

// perClient reshapes a stacked [K, D...] parameter to broadcast against x [K, ..., D...]:
// [K, 1, ..., 1, D...].
func perClient(s *cuda.Scope, p, x *cuda.Tensor) *cuda.Tensor {
	if p == nil || s.Err() != nil {
		return nil
	}
	ps := p.Shape()
	shape := []int64{ps[0]}
	for i := 0; i < x.Dim()-len(ps); i++ {
		shape = append(shape, 1)
	}
	return s.Reshape(p, append(shape, ps[1:]...)...)
}

// layerNorm normalizes x [K, ..., D] over D with each client's affine w, b [K, D].
func layerNorm(s *cuda.Scope, x, w, b *cuda.Tensor, eps float64) *cuda.Tensor {
	return s.LayerNorm(x, perClient(s, w, x), perClient(s, b, x), 1, eps)
}

// toGrouped folds clients into channels: [K, B, C, H, W] -> [B, K·C, H, W].
func toGrouped(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	sh := x.Shape()
	return s.Reshape(s.Permute(x, 1, 0, 2, 3, 4), sh[1], sh[0]*sh[2], sh[3], sh[4])
}

// fromGrouped unfolds [B, K·C, H, W] back to [K, B, C, H, W].
func fromGrouped(s *cuda.Scope, x *cuda.Tensor, k int64) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	sh := x.Shape()
	return s.Permute(s.Reshape(x, sh[0], k, sh[1]/k, sh[2], sh[3]), 1, 0, 2, 3, 4)
}

// conv2d convolves each client's images with its own filters: x [K, B, C, H, W], w [K, O,
// C/g, kh, kw], b [K, O] (or nil) -> [K, B, O, H', W']. On CUDA one grouped convolution
// does all clients; on the CPU each client's is a convolution of its own, which costs no
// more there and computes a client's rows exactly as a model of one client does (a grouped
// convolution of K groups takes another algorithm, and rounds otherwise, for each K), so
// a run does not depend on how its clients are stacked (fl's workers).
func conv2d(s *cuda.Scope, x, w, b *cuda.Tensor, o cuda.Conv2dOptions) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	k := x.Size(0)
	if !x.Device().IsCUDA() {
		outs := make([]*cuda.Tensor, k)
		for i := range k {
			var bi *cuda.Tensor
			if b != nil {
				bi = s.Select(b, 0, i)
			}
			outs[i] = s.Conv2d(s.Select(x, 0, i), s.Select(w, 0, i), bi, o)
		}
		return s.Stack(0, outs...)
	}
	ws := w.Shape()
	wg := s.Reshape(w, append([]int64{ws[0] * ws[1]}, ws[2:]...)...)
	var bg *cuda.Tensor
	if b != nil {
		bg = s.Reshape(b, -1)
	}
	if o.Groups == 0 {
		o.Groups = 1
	}
	o.Groups *= k
	return fromGrouped(s, s.Conv2d(toGrouped(s, x), wg, bg, o), k)
}

// batchNorm normalizes x [K, B, C, ...] per client and channel, updating each client's
// running statistics [K, C] in place when training.
func batchNorm(s *cuda.Scope, x, w, b, mean, variance *cuda.Tensor, train bool) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	sh := x.Shape()
	k := sh[0]
	var xg *cuda.Tensor
	if len(sh) == 5 {
		xg = toGrouped(s, x)
	} else { // [K, B, F] -> [B, K·F]
		xg = s.Reshape(s.Transpose(x, 0, 1), sh[1], k*sh[2])
	}
	flat := func(t *cuda.Tensor) *cuda.Tensor {
		if t == nil {
			return nil
		}
		return s.View(t, -1) // a view, so batch_norm's in-place update reaches the [K, C] buffer
	}
	// BatchNorm's defaults in PyTorch: momentum 0.1, eps 1e-5.
	y := s.BatchNorm(xg, flat(w), flat(b), flat(mean), flat(variance), train, 0.1, 1e-5)
	if len(sh) == 5 {
		return fromGrouped(s, y, k)
	}
	return s.Transpose(s.Reshape(y, sh[1], k, sh[2]), 0, 1)
}

// maskedBatchNorm is training-mode BatchNorm over the real samples of each client only:
// x [K, B, C, ...], mask [K, B]. A client's statistics count its n real values per channel
// (real samples × spatial positions), and its running statistics move (momentum 0.1,
// unbiased variance, as PyTorch) only where the batch estimates them: the mean where n ≥ 1,
// the variance where n ≥ 2.
//
// Padded rows (and every row of an idle client) leave as zeros. Normalizing them with the
// real samples' statistics, as an unmasked batch_norm would, divides their distance from
// the real mean by sqrt(var + eps), and the variance is 0 for an idle client (in every
// layer) and for a client whose batch gives one value per channel (one real sample where
// the activations are 1×1 — ResNet-50's layer4 at 32×32 — or in convnet-bn's fully
// connected layers): ×316 per layer at eps 1e-5, which overflows float32 within a ResNet;
// the next layer's masked sums then take inf·0 = NaN into the real rows and the loss. A
// zero row stays finite through any convolution, and the masked loss ignores it.
//
// One value per channel. PyTorch's nn.BatchNorm (F.batch_norm) refuses it in training
// ("Expected more than 1 value per channel when training"), so the official codes, whose
// DataLoader keeps the last partial batch (drop_last=False), stop at a client with
// m ≡ 1 (mod B) samples when a BatchNorm sees one value per sample. pfl trains that batch
// instead of failing: a federated client of 65 samples with batch 64 must train, and the
// refusal is a guard, not a result. The values are those of PyTorch's own batch_norm kernel
// (torch.batch_norm, which F.batch_norm calls after the check): the normalized value is 0,
// so the output is the bias, the gradient reaches the bias only (none to the input or the
// weight), and the running mean moves to the value. The kernel's running variance becomes
// 0/0 = NaN (the unbiased variance of one value, v·n/(n−1)), which FedAvg of the running
// statistics would hand to every client: here the running variance stays as it was.
func maskedBatchNorm(s *cuda.Scope, x, w, b, mean, variance, mask *cuda.Tensor) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	const momentum, eps = 0.1, 1e-5
	sh := x.Shape()
	k, c := sh[0], sh[2]
	// reduce over B and the spatial dims: move C last, flatten the rest per client
	spatial := int64(1)
	for _, d := range sh[3:] {
		spatial *= d
	}
	mshape := append([]int64{k, sh[1]}, make([]int64, len(sh)-2)...)
	for i := 2; i < len(mshape); i++ {
		mshape[i] = 1
	}
	m := s.Reshape(s.To(mask, x.DType()), mshape...) // [K, B, 1, ...]
	dims := []int{1}
	for i := 3; i < len(sh); i++ {
		dims = append(dims, i)
	}
	// a scalar op, not a host-made tensor: a captured step copies nothing from the host
	n := s.To(s.Reshape(s.MulScalar(s.Sum(m, false, 1), float64(spatial)), k), x.DType()) // [K]
	cshape := append([]int64{k, 1, c}, mshape[3:]...)                                     // [K, 1, C, 1...]
	nb := s.Reshape(s.Clamp(n, 1, math.Inf(1)), append([]int64{k, 1, 1}, mshape[3:]...)...)
	mu := s.Div(s.Sum(s.Mul(x, m), true, dims...), nb) // [K, 1, C, 1...]
	d := s.Sub(x, mu)
	v := s.Div(s.Sum(s.Mul(s.Mul(d, d), m), true, dims...), nb)
	y := s.Div(d, s.Sqrt(s.AddScalar(v, eps)))
	if w != nil {
		y = s.Mul(y, s.Reshape(w, cshape...))
	}
	if b != nil {
		y = s.Add(y, s.Reshape(b, cshape...))
	}
	y = s.Mul(y, m) // padded rows leave as zeros (see above)
	if mean != nil && variance != nil {
		grad := s.GradEnabled()
		s.SetGradEnabled(false)
		// n is a whole count: clamp(n, 0, 1) is 1 where n ≥ 1, clamp(n − 1, 0, 1) where n ≥ 2
		n1 := s.Reshape(n, k, 1)
		meanRate := s.MulScalar(s.Clamp(n1, 0, 1), momentum)
		varRate := s.MulScalar(s.Clamp(s.AddScalar(n1, -1), 0, 1), momentum)
		unbiased := s.Div(s.Mul(s.Reshape(v, k, c), n1), s.Clamp(s.AddScalar(n1, -1), 1, math.Inf(1)))
		s.CopyFrom(mean, s.Add(mean, s.Mul(meanRate, s.Sub(s.Reshape(mu, k, c), mean))))
		s.CopyFrom(variance, s.Add(variance, s.Mul(varRate, s.Sub(unbiased, variance))))
		s.SetGradEnabled(grad)
	}
	return y
}

// embedding looks up each client's own table: weight [K, V, D], index [K, ...] (int64) ->
// [K, ..., D], by offsetting client k's indices by k·V into the flattened tables.
func embedding(s *cuda.Scope, weight, index *cuda.Tensor) *cuda.Tensor {
	if s.Err() != nil {
		return nil
	}
	k, v := weight.Size(0), weight.Size(1)
	offShape := []int64{k}
	for i := 1; i < index.Dim(); i++ {
		offShape = append(offShape, 1)
	}
	off := s.Reshape(s.Arange(0, float64(k*v), float64(v), cuda.Int64, index.Device()), offShape...)
	return s.Embedding(s.Reshape(weight, k*v, -1), s.Add(index, off))
}

// dropout applies dropout with p to x [K, ...] when training, drawing row k's mask from
// pass.Gens[k] when the pass has per-client streams.
func dropout(s *cuda.Scope, x *cuda.Tensor, p float64, pass *Pass) *cuda.Tensor {
	if p == 0 || !pass.train() {
		return x
	}
	if gens := pass.Gens; gens != nil {
		if int64(len(gens)) != x.Size(0) {
			s.Fail(fmt.Errorf("model: %d dropout streams for %d stacked clients", len(gens), x.Size(0)))
			return nil
		}
		rows := make([]*cuda.Tensor, len(gens))
		for k, g := range gens {
			rows[k] = s.Dropout(g, s.Select(x, 0, int64(k)), p, true)
		}
		return s.Stack(0, rows...)
	}
	return s.Dropout(pass.gen(), x, p, true)
}

// checkImages records in s an error naming the model unless x is a client-stacked batch of
// images [k, B, ch, side, side], and reports whether it is.
func checkImages(s *cuda.Scope, model string, x *cuda.Tensor, k int, ch, side int64) bool {
	if x.Dim() != 5 || x.Size(0) != int64(k) || x.Size(2) != ch || x.Size(3) != side || x.Size(4) != side {
		s.Fail(fmt.Errorf("%s: input %v, want [%d B %d %d %d]", model, x.Shape(), k, ch, side, side))
		return false
	}
	return true
}
