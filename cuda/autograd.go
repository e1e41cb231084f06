package cuda

// GradOptions are the flags of Scope.Grad (torch::autograd::grad).
type GradOptions struct {
	RetainGraph bool // keep the graph for another backward pass
	CreateGraph bool // record the gradient computation itself (higher-order gradients)
	AllowUnused bool // an input the outputs do not depend on gets a nil gradient, not an error
}

func (s *Scope) loadGradArgs(op string, outs, gradOuts []*Tensor, extra []*Tensor) bool {
	if len(outs) == 0 {
		s.failf(op, CodeArgument, "no outputs")
		return false
	}
	if gradOuts != nil && len(gradOuts) != len(outs) {
		s.failf(op, CodeArgument, "%d grad_outputs for %d outputs", len(gradOuts), len(outs))
		return false
	}
	if !s.args(op, outs, gradOuts...) {
		return false
	}
	for i, g := range gradOuts {
		if g == nil {
			if outs[i].Numel() != 1 {
				s.failf(op, CodeShape, "output %d has shape %v: a non-scalar output needs a grad_output", i, outs[i].shape)
				return false
			}
			continue
		}
		if !equalShape(g.shape, outs[i].shape) || g.dtype != outs[i].dtype {
			s.failf(op, CodeShape, "grad_output %d is %s %v, output is %s %v", i, g.dtype, g.shape, outs[i].dtype, outs[i].shape)
			return false
		}
	}
	for i, t := range extra {
		if t == nil || t.h == nil {
			s.failf(op, CodeArgument, "input %d is nil or closed", i)
			return false
		}
		s.c.addIn(t.h)
	}
	return true
}

// Backward accumulates d(Σ_i <outs_i, gradOuts_i>)/d(leaf) into the .grad of every leaf
// that requires grad. gradOuts may be nil (or hold nil) for scalar outputs. Unless
// retain, the graph is freed.
func (s *Scope) Backward(outs, gradOuts []*Tensor, retain bool) {
	const op = "backward"
	if !s.loadGradArgs(op, outs, gradOuts, nil) {
		return
	}
	if err := s.c.backward(len(outs), gradOuts != nil, retain); err != nil {
		s.fail(err)
	}
}

// Grad returns the vector-Jacobian products Σ_i (∂outs_i/∂inputs_j)ᵀ gradOuts_i for every
// input j, from one traversal of the graph — FedTP's server update
// Σ_i (m_i/M)(∂W_i/∂φ)ᵀ ΔW_i for all sampled clients in one call. gradOuts may be nil for
// scalar outputs. With AllowUnused, an input the outputs do not reach gets nil.
func (s *Scope) Grad(outs, gradOuts, inputs []*Tensor, o GradOptions) []*Tensor {
	const op = "grad"
	if len(inputs) == 0 {
		s.failf(op, CodeArgument, "no inputs")
		return nil
	}
	if !s.loadGradArgs(op, outs, gradOuts, inputs) {
		return nil
	}
	if err := s.c.grad(len(outs), len(inputs), gradOuts != nil, o.RetainGraph, o.CreateGraph, o.AllowUnused); err != nil {
		s.fail(err)
		return nil
	}
	res := make([]*Tensor, len(inputs))
	for i := range res {
		if h := s.c.handleOut(i); h != nil {
			res[i] = s.own(h, s.c.metaOut(i))
		}
	}
	return res
}

// GradOf returns t's accumulated gradient (sharing its memory), or nil if t has none.
func (s *Scope) GradOf(t *Tensor) *Tensor {
	const op = "grad_of"
	if !s.args(op, []*Tensor{t}) {
		return nil
	}
	h, m, err := nativeGradOf(t.h)
	if err != nil {
		s.fail(err)
		return nil
	}
	if h == nil {
		return nil
	}
	return s.own(h, m)
}

// ZeroGrad zeroes the accumulated gradients of ts (setToNone drops them instead, so the
// next backward allocates fresh ones).
func ZeroGrad(setToNone bool, ts ...*Tensor) error {
	if err := Load(); err != nil {
		return err
	}
	hs := make([]unsafeHandle, 0, len(ts))
	for i, t := range ts {
		if err := t.check("zero_grad"); err != nil {
			return errorf("zero_grad", err.(*Error).Code, "tensor %d: %s", i, err.(*Error).Msg)
		}
		hs = append(hs, t.h)
	}
	return nativeZeroGrad(hs, setToNone)
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
