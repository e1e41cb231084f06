package fl

import "pfl/cuda"

// sgd is torch.optim.SGD (momentum, weight decay, no dampening, no Nesterov) over
// client-stacked parameters [K, ...], each client with its own momentum buffer, and with a
// per-client activity a_k ∈ {0, 1}: a client whose epochs are done (a_k = 0) neither
// decays nor moves, and its buffer keeps its value, exactly as if its own optimizer had
// stopped (whatever its gradient).
//
// A step is a handful of multi-tensor calls for all parameters (not a few calls per
// parameter): the activity is reshaped once per parameter rank and broadcast.
type sgd struct {
	lr, momentum, wd float64
	bufs             []*cuda.Tensor // momentum buffers, owned; nil until the first step
}

// Step updates params in place from grads (left untouched: autograd may hand one tensor
// to two parameters). active is [K] float32. The weight-decay term is added after the
// gradient rather than before, so a step can round differently from torch's in the last
// bit.
func (o *sgd) Step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	a := perParam(s, params, active, 1, 0)
	if o.momentum == 0 {
		if o.wd != 0 { // p ← p·(1 − lr·λ·a)
			s.ForeachMul(params, perParam(s, params, active, -o.lr*o.wd, 1))
		}
		s.ForeachAddcmul(params, grads, a, -o.lr) // p −= lr·g·a
		return
	}
	if o.bufs == nil {
		o.bufs = make([]*cuda.Tensor, len(params))
		for i, p := range params {
			o.bufs[i] = s.Zeros(p.DType(), p.Device(), p.Shape()...)
			s.Keep(o.bufs[i])
		}
	}
	// buf ← buf·(μ·a + 1 − a) + (g + λ·p)·a: changes only where the client is active
	s.ForeachMul(o.bufs, perParam(s, params, active, o.momentum-1, 1))
	s.ForeachAddcmul(o.bufs, grads, a, 1)
	if o.wd != 0 {
		s.ForeachAddcmul(o.bufs, params, a, o.wd)
	}
	s.ForeachAddcmul(params, o.bufs, a, -o.lr) // p −= lr·buf·a
}

// perParam is active·mul + add [K], computed in each parameter's dtype and viewed as
// [K, 1, ...] with its rank: one small tensor per distinct rank and dtype.
func perParam(s *cuda.Scope, params []*cuda.Tensor, active *cuda.Tensor, mul, add float64) []*cuda.Tensor {
	type key struct {
		rank int
		dt   cuda.DType
	}
	views := map[key]*cuda.Tensor{}
	out := make([]*cuda.Tensor, len(params))
	for i, p := range params {
		k := key{p.Dim(), p.DType()}
		if views[k] == nil {
			shape := make([]int64, k.rank)
			for j := range shape {
				shape[j] = 1
			}
			shape[0] = -1
			v := s.To(active, k.dt)
			if mul != 1 || add != 0 {
				v = s.AddScalar(s.MulScalar(v, mul), add)
			}
			views[k] = s.Reshape(v, shape...)
		}
		out[i] = views[k]
	}
	return out
}

// Reset zeroes the momentum buffers (in place: a captured step keeps reading them).
func (o *sgd) Reset(s *cuda.Scope) {
	if o.bufs != nil {
		s.ForeachZero(o.bufs)
	}
}

// Close frees the momentum buffers.
func (o *sgd) Close() error {
	for _, b := range o.bufs {
		b.Close()
	}
	o.bufs = nil
	return nil
}
