package cuda

import "slices"

// inferShape resolves one -1 in shape against n elements, reporting whether it fits.
func inferShape(shape []int64, n int64) ([]int64, bool) {
	out := slices.Clone(shape)
	known, free := int64(1), -1
	for i, d := range out {
		switch {
		case d == -1 && free < 0:
			free = i
		case d < 0:
			return nil, false
		default:
			known *= d
		}
	}
	if free >= 0 {
		if known == 0 || n%known != 0 {
			return nil, false
		}
		out[free] = n / known
		return out, true
	}
	return out, known == n
}

func (s *Scope) reshapeLike(op string, code int32, t *Tensor, shape []int64) *Tensor {
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	if _, ok := inferShape(shape, t.Numel()); !ok {
		return s.failf(op, CodeShape, "cannot reshape %v (%d elements) to %v", t.shape, t.Numel(), shape)
	}
	s.ints(shape...)
	return s.run1(op, code, nil)
}

// Reshape is t with a new shape of the same size (one dimension may be -1); a view when
// the layout allows, else a copy.
func (s *Scope) Reshape(t *Tensor, shape ...int64) *Tensor {
	return s.reshapeLike("reshape", opReshape, t, shape)
}

// View is t with a new shape sharing its memory; t's layout must allow it.
func (s *Scope) View(t *Tensor, shape ...int64) *Tensor {
	return s.reshapeLike("view", opView, t, shape)
}

// Permute reorders t's dimensions: result dim i is t's dim dims[i].
func (s *Scope) Permute(t *Tensor, dims ...int64) *Tensor {
	const op = "permute"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	seen := make([]bool, len(t.shape))
	if len(dims) != len(t.shape) {
		return s.failf(op, CodeShape, "%d dims for shape %v", len(dims), t.shape)
	}
	for _, d := range dims {
		n, ok := normDim(int(d), len(t.shape))
		if !ok || seen[n] {
			return s.failf(op, CodeShape, "%v is not a permutation of the dims of %v", dims, t.shape)
		}
		seen[n] = true
	}
	s.ints(dims...)
	return s.run1(op, opPermute, nil)
}

// Transpose swaps dims d0 and d1 of t (a view).
func (s *Scope) Transpose(t *Tensor, d0, d1 int) *Tensor {
	const op = "transpose"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	if _, ok := s.checkDim(op, t, d0); !ok {
		return nil
	}
	if _, ok := s.checkDim(op, t, d1); !ok {
		return nil
	}
	s.ints(int64(d0), int64(d1))
	return s.run1(op, opTranspose, nil)
}

// Expand broadcasts t to shape (-1 keeps a dimension) without copying.
func (s *Scope) Expand(t *Tensor, shape ...int64) *Tensor {
	const op = "expand"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	if len(shape) < len(t.shape) {
		return s.failf(op, CodeShape, "cannot expand %v to fewer dims %v", t.shape, shape)
	}
	off := len(shape) - len(t.shape)
	for i, d := range t.shape {
		if w := shape[off+i]; w != -1 && d != 1 && d != w {
			return s.failf(op, CodeShape, "cannot expand %v to %v", t.shape, shape)
		}
	}
	s.ints(shape...)
	return s.run1(op, opExpand, nil)
}

// Squeeze removes dimension dim of t if its size is 1.
func (s *Scope) Squeeze(t *Tensor, dim int) *Tensor {
	if !s.args("squeeze", []*Tensor{t}) {
		return nil
	}
	if _, ok := s.checkDim("squeeze", t, dim); !ok {
		return nil
	}
	s.ints(int64(dim))
	return s.run1("squeeze", opSqueeze, nil)
}

// Unsqueeze inserts a dimension of size 1 at dim (in [-rank-1, rank]).
func (s *Scope) Unsqueeze(t *Tensor, dim int) *Tensor {
	if !s.args("unsqueeze", []*Tensor{t}) {
		return nil
	}
	if _, ok := normDim(dim, len(t.shape)+1); !ok {
		return s.failf("unsqueeze", CodeShape, "dim %d out of range for shape %v", dim, t.shape)
	}
	s.ints(int64(dim))
	return s.run1("unsqueeze", opUnsqueeze, nil)
}

// Flatten merges dims start..end (inclusive) of t into one.
func (s *Scope) Flatten(t *Tensor, start, end int) *Tensor {
	const op = "flatten"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	a, ok1 := normDim(start, max(len(t.shape), 1))
	b, ok2 := normDim(end, max(len(t.shape), 1))
	if !ok1 || !ok2 || a > b {
		return s.failf(op, CodeShape, "dims %d..%d invalid for shape %v", start, end, t.shape)
	}
	s.ints(int64(start), int64(end))
	return s.run1(op, opFlatten, nil)
}

func (s *Scope) joinCheck(op string, dim int, ts []*Tensor, stack bool) bool {
	if len(ts) == 0 {
		s.failf(op, CodeArgument, "no tensors")
		return false
	}
	if !s.args(op, ts) || !s.checkSameDType(op, ts...) {
		return false
	}
	first := ts[0]
	rank := len(first.shape)
	if stack {
		rank++
	}
	d, ok := normDim(dim, rank)
	if !ok {
		s.failf(op, CodeShape, "dim %d out of range for %d tensors of shape %v", dim, len(ts), first.shape)
		return false
	}
	for i, t := range ts[1:] {
		if len(t.shape) != len(first.shape) {
			s.failf(op, CodeShape, "tensor %d has shape %v, tensor 0 has %v", i+1, t.shape, first.shape)
			return false
		}
		for j := range t.shape {
			if t.shape[j] != first.shape[j] && (stack || j != d) {
				s.failf(op, CodeShape, "tensor %d has shape %v, tensor 0 has %v (dim %d)", i+1, t.shape, first.shape, dim)
				return false
			}
		}
	}
	s.ints(int64(dim))
	return true
}

// Cat concatenates ts along dim; all other dims must agree.
func (s *Scope) Cat(dim int, ts ...*Tensor) *Tensor {
	if !s.joinCheck("cat", dim, ts, false) {
		return nil
	}
	return s.run1("cat", opCat, nil)
}

// Stack joins equal-shaped ts along a new dim.
func (s *Scope) Stack(dim int, ts ...*Tensor) *Tensor {
	if !s.joinCheck("stack", dim, ts, true) {
		return nil
	}
	return s.run1("stack", opStack, nil)
}

// Narrow is t[..., start:start+length, ...] along dim (a view).
func (s *Scope) Narrow(t *Tensor, dim int, start, length int64) *Tensor {
	const op = "narrow"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	d, ok := s.checkDim(op, t, dim)
	if !ok {
		return nil
	}
	if start < 0 || length < 0 || start+length > t.shape[d] {
		return s.failf(op, CodeIndex, "[%d, %d) out of range for dim %d of %v", start, start+length, dim, t.shape)
	}
	s.ints(int64(dim), start, length)
	return s.run1(op, opNarrow, nil)
}

// Slice is t[..., start:end:step, ...] along dim, Python-style (clamped ends, negative
// start and end count from the back), as a view.
func (s *Scope) Slice(t *Tensor, dim int, start, end, step int64) *Tensor {
	const op = "slice"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	if _, ok := s.checkDim(op, t, dim); !ok {
		return nil
	}
	if step < 1 {
		return s.failf(op, CodeArgument, "step %d must be positive", step)
	}
	s.ints(int64(dim), start, end, step)
	return s.run1(op, opSlice, nil)
}

// Select is t indexed at index along dim, which disappears (a view).
func (s *Scope) Select(t *Tensor, dim int, index int64) *Tensor {
	const op = "select"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	d, ok := s.checkDim(op, t, dim)
	if !ok {
		return nil
	}
	if index < -t.shape[d] || index >= t.shape[d] {
		return s.failf(op, CodeIndex, "index %d out of range for dim %d of %v", index, dim, t.shape)
	}
	s.ints(int64(dim), index)
	return s.run1(op, opSelect, nil)
}

func (s *Scope) indexed(op string, dim int, in []*Tensor, index *Tensor) bool {
	if !s.args(op, in) || !s.checkDType(op, "index", index, Int64) {
		return false
	}
	if _, ok := s.checkDim(op, in[0], dim); !ok {
		return false
	}
	s.ints(int64(dim))
	return true
}

// IndexSelect picks the entries index (1-D, int64) of t along dim.
func (s *Scope) IndexSelect(t *Tensor, dim int, index *Tensor) *Tensor {
	if !s.indexed("index_select", dim, []*Tensor{t, index}, index) ||
		!s.checkRank("index_select", "index", index, 1) {
		return nil
	}
	return s.run1("index_select", opIndexSelect, nil)
}

// Gather is out[i][j] = t[index[i][j]][j] (dim 0; likewise for other dims); index is int64
// with t's rank.
func (s *Scope) Gather(t *Tensor, dim int, index *Tensor) *Tensor {
	if !s.indexed("gather", dim, []*Tensor{t, index}, index) ||
		!s.checkRank("gather", "index", index, len(t.shape)) {
		return nil
	}
	return s.run1("gather", opGather, nil)
}

// ScatterAdd is a copy of t with src added at index along dim (out[index[i][j]][j] +=
// src[i][j] for dim 0).
func (s *Scope) ScatterAdd(t *Tensor, dim int, index, src *Tensor) *Tensor {
	if !s.indexed("scatter_add", dim, []*Tensor{t, index, src}, index) ||
		!s.checkSameDType("scatter_add", t, src) {
		return nil
	}
	return s.run1("scatter_add", opScatterAdd, nil)
}

// Split cuts t along dim into pieces of the given sizes, which must sum to t's size there.
func (s *Scope) Split(t *Tensor, dim int, sizes ...int64) []*Tensor {
	const op = "split"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	d, ok := s.checkDim(op, t, dim)
	if !ok {
		return nil
	}
	var sum int64
	for _, n := range sizes {
		sum += n
	}
	if sum != t.shape[d] || len(sizes) == 0 {
		s.failf(op, CodeShape, "sizes %v do not sum to dim %d of %v", sizes, dim, t.shape)
		return nil
	}
	s.ints(int64(dim))
	s.ints(sizes...)
	return s.runN(op, opSplit, nil, len(sizes))
}

// Repeat tiles t: dimension i is repeated reps[i] times (len(reps) >= rank).
func (s *Scope) Repeat(t *Tensor, reps ...int64) *Tensor {
	if !s.args("repeat", []*Tensor{t}) {
		return nil
	}
	if len(reps) < len(t.shape) {
		return s.failf("repeat", CodeShape, "%d repeats for shape %v", len(reps), t.shape)
	}
	s.ints(reps...)
	return s.run1("repeat", opRepeat, nil)
}

// IndexCopy writes src's slices into dst in place along dim, outside autograd:
// dst[index[i]] = src[i] (dim 0). It is how rows of a client-stacked tensor go back to the
// store of all clients.
func (s *Scope) IndexCopy(dst *Tensor, dim int, index, src *Tensor) {
	const op = "index_copy"
	if !s.indexed(op, dim, []*Tensor{dst, index, src}, index) || !s.checkRank(op, "index", index, 1) ||
		!s.checkSameDType(op, dst, src) {
		return
	}
	d, _ := normDim(dim, dst.Dim())
	if src.Dim() != dst.Dim() || src.Size(d) != index.Size(0) {
		s.failf(op, CodeShape, "source %v does not fit %d indices into %v along dim %d", src.shape, index.Size(0), dst.shape, dim)
		return
	}
	s.run0(op, opIndexCopy, nil)
}
