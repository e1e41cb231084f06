package fl

import "pfl/cuda"

// sgd is torch.optim.SGD (momentum, weight decay, no dampening, no Nesterov) over
// client-stacked parameters [K, ...], each client with its own momentum buffer, and with a
// per-client activity a_k ∈ {0, 1}: a client whose epochs are done (a_k = 0) neither
// decays nor moves, exactly as if its own optimizer had stopped.
type sgd struct {
	lr, momentum, wd float64
	bufs             []*cuda.Tensor // momentum buffers, owned; nil until the first step
}

// step updates params in place from grads. active is [K] float32.
func (o *sgd) step(s *cuda.Scope, params, grads []*cuda.Tensor, active *cuda.Tensor) {
	if o.bufs == nil && o.momentum != 0 {
		o.bufs = make([]*cuda.Tensor, len(params))
		for i, p := range params {
			o.bufs[i] = s.Zeros(p.DType(), p.Device(), p.Shape()...)
			s.Keep(o.bufs[i])
		}
	}
	grad := s.GradEnabled()
	s.SetGradEnabled(false)
	defer s.SetGradEnabled(grad)
	for i, p := range params {
		shape := make([]int64, p.Dim())
		for j := range shape {
			shape[j] = 1
		}
		shape[0] = -1
		a := s.Reshape(s.To(active, p.DType()), shape...)
		g := grads[i]
		if o.wd != 0 {
			g = s.Add(g, s.Mul(s.MulScalar(p, o.wd), a))
		}
		if o.momentum != 0 {
			// buf ← buf·(μ·a + 1 − a) + g: decays only where the client is active
			keep := s.AddScalar(s.MulScalar(a, o.momentum-1), 1)
			s.CopyFrom(o.bufs[i], s.Add(s.Mul(o.bufs[i], keep), g))
			g = o.bufs[i]
		}
		s.CopyFrom(p, s.Sub(p, s.Mul(s.MulScalar(g, o.lr), a)))
	}
}

// close frees the momentum buffers.
func (o *sgd) close() {
	for _, b := range o.bufs {
		b.Close()
	}
	o.bufs = nil
}
