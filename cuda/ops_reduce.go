package cuda

func (s *Scope) reduce(op string, code int32, x *Tensor, keepdim bool, dims []int) *Tensor {
	if !s.args(op, []*Tensor{x}) {
		return nil
	}
	s.ints(b2i(keepdim))
	for _, d := range dims {
		if _, ok := s.checkDim(op, x, d); !ok {
			return nil
		}
		s.ints(int64(d))
	}
	return s.run1(op, code, nil)
}

// Sum adds x over dims (all elements, to a scalar, when none are given).
func (s *Scope) Sum(x *Tensor, keepdim bool, dims ...int) *Tensor {
	return s.reduce("sum", opSum, x, keepdim, dims)
}

// Mean averages x over dims (all elements when none are given).
func (s *Scope) Mean(x *Tensor, keepdim bool, dims ...int) *Tensor {
	return s.reduce("mean", opMean, x, keepdim, dims)
}

// Amax is the maximum of x over dims (all elements when none are given).
func (s *Scope) Amax(x *Tensor, keepdim bool, dims ...int) *Tensor {
	return s.reduce("amax", opAmax, x, keepdim, dims)
}

// Argmax is the index (int64) of the largest value of x along dim.
func (s *Scope) Argmax(x *Tensor, dim int, keepdim bool) *Tensor {
	const op = "argmax"
	if !s.args(op, []*Tensor{x}) {
		return nil
	}
	if _, ok := s.checkDim(op, x, dim); !ok {
		return nil
	}
	s.ints(int64(dim), b2i(keepdim))
	return s.run1(op, opArgmax, nil)
}

// TopK returns the k largest (or smallest) values of x along dim and their int64 indices.
func (s *Scope) TopK(x *Tensor, k int64, dim int, largest, sorted bool) (values, indices *Tensor) {
	const op = "topk"
	if !s.args(op, []*Tensor{x}) {
		return nil, nil
	}
	d, ok := s.checkDim(op, x, dim)
	if !ok {
		return nil, nil
	}
	if k < 0 || k > x.shape[d] {
		s.failf(op, CodeIndex, "k = %d out of range for dim %d of %v", k, dim, x.shape)
		return nil, nil
	}
	s.ints(k, int64(dim), b2i(largest), b2i(sorted))
	r := s.runN(op, opTopk, nil, 2)
	if r == nil {
		return nil, nil
	}
	return r[0], r[1]
}
