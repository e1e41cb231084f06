package cuda

// Multi-tensor updates: one native call (and, on CUDA, a few multi-tensor-apply kernels)
// for a whole list of parameters, as optimizers and aggregation need. They run without
// autograd and modify their first list in place.

func (s *Scope) foreach(op string, code int32, lists [][]*Tensor, v ...float64) bool {
	n := len(lists[0])
	var all []*Tensor
	for li, l := range lists {
		if len(l) != n {
			s.failf(op, CodeArgument, "list %d has %d tensors, list 0 has %d", li, len(l), n)
			return false
		}
		all = append(all, l...)
	}
	if !s.args(op, all) {
		return false
	}
	for li, l := range lists[1:] {
		for i, t := range l {
			x := lists[0][i]
			if _, ok := broadcast(x.shape, t.shape); !ok || numel(t.shape) > x.Numel() {
				s.failf(op, CodeShape, "list %d tensor %d has shape %v, target has %v", li+1, i, t.shape, x.shape)
				return false
			}
		}
	}
	s.dbls(v...)
	return s.run0(op, code, nil)
}

// ForeachAdd does x_i += alpha*y_i for every i.
func (s *Scope) ForeachAdd(xs, ys []*Tensor, alpha float64) {
	s.foreach("foreach_add", opForeachAdd, [][]*Tensor{xs, ys}, alpha)
}

// ForeachAddScalar does x_i += v for every i.
func (s *Scope) ForeachAddScalar(xs []*Tensor, v float64) {
	s.foreach("foreach_add_scalar", opForeachAddScalar, [][]*Tensor{xs}, v)
}

// ForeachScale does x_i *= v for every i.
func (s *Scope) ForeachScale(xs []*Tensor, v float64) {
	s.foreach("foreach_scale", opForeachMulScalar, [][]*Tensor{xs}, v)
}

// ForeachMul does x_i *= y_i elementwise for every i.
func (s *Scope) ForeachMul(xs, ys []*Tensor) {
	s.foreach("foreach_mul", opForeachMul, [][]*Tensor{xs, ys})
}

// ForeachAddcmul does x_i += v * a_i * b_i for every i.
func (s *Scope) ForeachAddcmul(xs, as, bs []*Tensor, v float64) {
	s.foreach("foreach_addcmul", opForeachAddcmul, [][]*Tensor{xs, as, bs}, v)
}

// ForeachAddcdiv does x_i += v * a_i / b_i for every i.
func (s *Scope) ForeachAddcdiv(xs, as, bs []*Tensor, v float64) {
	s.foreach("foreach_addcdiv", opForeachAddcdiv, [][]*Tensor{xs, as, bs}, v)
}

// ForeachWeightedSum sets dst_i = Σ_k w_k src_i[k] for every i: src_i is client-stacked
// [K, ...], dst_i holds one row's elements ([1, ...] or [...]), w is [K]. One native call
// and one matrix-vector product per tensor: FedAvg's aggregation of all shared parameters.
func (s *Scope) ForeachWeightedSum(dst, src []*Tensor, w *Tensor) {
	const op = "foreach_weighted_sum"
	if s.weightedSumArgs(op, dst, src, w) {
		s.run0(op, opForeachWeightedSum, nil)
	}
}

// weightedSumArgs checks the arguments of a weighted sum over clients (ForeachWeightedSum,
// KernelWeightedSum): as many targets as sources, valid tensors, weights [K], and every
// source [K] + its target's elements.
func (s *Scope) weightedSumArgs(op string, dst, src []*Tensor, w *Tensor) bool {
	if len(dst) != len(src) || len(dst) == 0 {
		s.failf(op, CodeArgument, "%d targets for %d sources", len(dst), len(src))
		return false
	}
	all := append(append(append([]*Tensor(nil), dst...), src...), w)
	if !s.args(op, all) {
		return false
	}
	if w.Dim() != 1 {
		s.failf(op, CodeShape, "weights have shape %v, want [K]", w.shape)
		return false
	}
	for i, t := range src {
		if t.Dim() < 1 || t.shape[0] != w.shape[0] || t.Numel() != dst[i].Numel()*w.shape[0] {
			s.failf(op, CodeShape, "source %d has shape %v: want [%d] + target %d's %v", i, t.shape, w.shape[0], i, dst[i].shape)
			return false
		}
	}
	return true
}

// ForeachZero sets every x_i to zero.
func (s *Scope) ForeachZero(xs []*Tensor) {
	s.foreach("foreach_zero", opForeachZero, [][]*Tensor{xs})
}

// ForeachCopy copies src_i into dst_i for every i.
func (s *Scope) ForeachCopy(dst, src []*Tensor) {
	s.foreach("foreach_copy", opForeachCopy, [][]*Tensor{dst, src})
}

// ForeachLerp does x_i += w*(y_i - x_i) for every i.
func (s *Scope) ForeachLerp(xs, ys []*Tensor, w float64) {
	s.foreach("foreach_lerp", opForeachLerp, [][]*Tensor{xs, ys}, w)
}

// ForeachSqrt returns sqrt(x_i) for every i, as new tensors.
func (s *Scope) ForeachSqrt(xs []*Tensor) []*Tensor {
	const op = "foreach_sqrt"
	if !s.args(op, xs) {
		return nil
	}
	return s.runN(op, opForeachSqrt, nil, len(xs))
}
