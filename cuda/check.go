package cuda

// Shape and dtype checks made in Go before a native call, so a mistake names the op and
// the shapes instead of surfacing as a libtorch message about internal tensors.

// broadcast returns the broadcast shape of a and b (numpy rules) and whether they fit.
func broadcast(a, b []int64) ([]int64, bool) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := 0; i < n; i++ {
		da, db := int64(1), int64(1)
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// normDim maps a possibly negative dim into [0, rank), reporting whether it was in range.
func normDim(dim, rank int) (int, bool) {
	if dim < 0 {
		dim += rank
	}
	return dim, dim >= 0 && dim < rank
}

func (s *Scope) checkBroadcast(op string, a, b *Tensor) bool {
	if a == nil || b == nil {
		return true // args reports nil inputs
	}
	if _, ok := broadcast(a.shape, b.shape); !ok {
		s.failf(op, CodeShape, "shapes %v and %v do not broadcast", a.shape, b.shape)
		return false
	}
	return true
}

func (s *Scope) checkSameDType(op string, ts ...*Tensor) bool {
	var first *Tensor
	for _, t := range ts {
		if t == nil {
			continue
		}
		if first == nil {
			first = t
		} else if t.dtype != first.dtype && !(s.autocast != noAutocast && t.dtype.IsFloat() && first.dtype.IsFloat()) {
			// under autocast libtorch casts mixed float operands itself (bf16 activations
			// meet float32 weights by design)
			s.failf(op, CodeDType, "dtypes %s and %s differ", first.dtype, t.dtype)
			return false
		}
	}
	return true
}

func (s *Scope) checkDType(op, what string, t *Tensor, want ...DType) bool {
	if t == nil {
		return true
	}
	for _, d := range want {
		if t.dtype == d {
			return true
		}
	}
	s.failf(op, CodeDType, "%s has dtype %s, want one of %v", what, t.dtype, want)
	return false
}

func (s *Scope) checkFloat(op, what string, t *Tensor) bool {
	if t == nil || t.dtype.IsFloat() {
		return true
	}
	s.failf(op, CodeDType, "%s has dtype %s, want a floating-point type", what, t.dtype)
	return false
}

func (s *Scope) checkRank(op, what string, t *Tensor, ranks ...int) bool {
	if t == nil {
		return true
	}
	for _, r := range ranks {
		if len(t.shape) == r {
			return true
		}
	}
	s.failf(op, CodeShape, "%s has shape %v, want rank %v", what, t.shape, ranks)
	return false
}

func (s *Scope) checkDim(op string, t *Tensor, dim int) (int, bool) {
	d, ok := normDim(dim, len(t.shape))
	if !ok {
		s.failf(op, CodeShape, "dim %d out of range for shape %v", dim, t.shape)
	}
	return d, ok
}

// present reports whether every tensor is non-nil and open; args reports which one is not.
func present(ts ...*Tensor) bool {
	for _, t := range ts {
		if t == nil || t.h == nil {
			return false
		}
	}
	return true
}
