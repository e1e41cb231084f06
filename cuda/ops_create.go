package cuda

// spec loads the dtype/device/shape prefix of the creation ops.
func (s *Scope) spec(dt DType, dev Device, shape []int64) {
	s.ints(int64(dt), int64(dev.Type), int64(dev.Index))
	s.ints(shape...)
}

func (s *Scope) creation(op string, code int32, dt DType, dev Device, shape []int64, gen *Generator, v ...float64) *Tensor {
	if !s.args(op, nil) {
		return nil
	}
	for _, d := range shape {
		if d < 0 {
			return s.failf(op, CodeShape, "negative dimension in %v", shape)
		}
	}
	if gen != nil && gen.dev != dev {
		return s.failf(op, CodeArgument, "generator on %s, tensor on %s", gen.dev, dev)
	}
	s.spec(dt, dev, shape)
	s.dbls(v...)
	return s.run1(op, code, gen)
}

// Zeros is a tensor of zeros.
func (s *Scope) Zeros(dt DType, dev Device, shape ...int64) *Tensor {
	return s.creation("zeros", opZeros, dt, dev, shape, nil)
}

// Ones is a tensor of ones.
func (s *Scope) Ones(dt DType, dev Device, shape ...int64) *Tensor {
	return s.creation("ones", opOnes, dt, dev, shape, nil)
}

// Full is a tensor filled with v.
func (s *Scope) Full(v float64, dt DType, dev Device, shape ...int64) *Tensor {
	return s.creation("full", opFull, dt, dev, shape, nil, v)
}

// Arange is [start, start+step, ...) up to end (exclusive).
func (s *Scope) Arange(start, end, step float64, dt DType, dev Device) *Tensor {
	if !s.args("arange", nil) {
		return nil
	}
	if step == 0 {
		return s.failf("arange", CodeArgument, "step is 0")
	}
	s.ints(int64(dt), int64(dev.Type), int64(dev.Index))
	s.dbls(start, end, step)
	return s.run1("arange", opArange, nil)
}

// To converts t to dtype dt (a copy unless t already has it).
func (s *Scope) To(t *Tensor, dt DType) *Tensor {
	if !s.args("to", []*Tensor{t}) {
		return nil
	}
	s.ints(int64(dt), -1, 0)
	return s.run1("to", opTo, nil)
}

// ToDevice moves t to dev (a copy unless t is already there).
func (s *Scope) ToDevice(t *Tensor, dev Device) *Tensor {
	if !s.args("to_device", []*Tensor{t}) {
		return nil
	}
	s.ints(-1, int64(dev.Type), int64(dev.Index))
	return s.run1("to_device", opTo, nil)
}

// Clone is a copy of t that autograd connects to t.
func (s *Scope) Clone(t *Tensor) *Tensor {
	if !s.args("clone", []*Tensor{t}) {
		return nil
	}
	return s.run1("clone", opClone, nil)
}

// Detach is t without autograd history (sharing t's memory).
func (s *Scope) Detach(t *Tensor) *Tensor {
	if !s.args("detach", []*Tensor{t}) {
		return nil
	}
	return s.run1("detach", opDetach, nil)
}

// Contiguous is t laid out in row-major order (t itself if it already is).
func (s *Scope) Contiguous(t *Tensor) *Tensor {
	if !s.args("contiguous", []*Tensor{t}) {
		return nil
	}
	return s.run1("contiguous", opContiguous, nil)
}

// CopyFrom copies src into dst in place (src broadcast to dst's shape, converted to its
// dtype and device).
func (s *Scope) CopyFrom(dst, src *Tensor) {
	if !s.args("copy", []*Tensor{dst, src}) {
		return
	}
	if b, ok := broadcast(dst.shape, src.shape); !ok || len(b) != len(dst.shape) || numel(b) != dst.Numel() {
		s.failf("copy", CodeShape, "source %v does not broadcast to destination %v", src.shape, dst.shape)
		return
	}
	s.run0("copy", opCopy, nil)
}

// Rand draws U[0, 1) from gen.
func (s *Scope) Rand(gen *Generator, dt DType, dev Device, shape ...int64) *Tensor {
	if gen == nil {
		return s.failf("rand", CodeArgument, "nil generator")
	}
	return s.creation("rand", opRand, dt, dev, shape, gen)
}

// Randn draws N(0, 1) from gen.
func (s *Scope) Randn(gen *Generator, dt DType, dev Device, shape ...int64) *Tensor {
	if gen == nil {
		return s.failf("randn", CodeArgument, "nil generator")
	}
	return s.creation("randn", opRandn, dt, dev, shape, gen)
}

// RandInt draws int64 values uniformly from [low, high) with gen.
func (s *Scope) RandInt(gen *Generator, low, high int64, dev Device, shape ...int64) *Tensor {
	const op = "randint"
	if !s.args(op, nil) {
		return nil
	}
	if gen == nil || gen.dev != dev {
		return s.failf(op, CodeArgument, "need a generator on %s", dev)
	}
	if high <= low {
		return s.failf(op, CodeArgument, "empty range [%d, %d)", low, high)
	}
	s.ints(low, high, int64(dev.Type), int64(dev.Index))
	s.ints(shape...)
	return s.run1(op, opRandint, gen)
}

// RandPerm is a random permutation of 0..n-1 drawn with gen.
func (s *Scope) RandPerm(gen *Generator, n int64, dev Device) *Tensor {
	const op = "randperm"
	if !s.args(op, nil) {
		return nil
	}
	if gen == nil || gen.dev != dev {
		return s.failf(op, CodeArgument, "need a generator on %s", dev)
	}
	s.ints(n, int64(dev.Type), int64(dev.Index))
	return s.run1(op, opRandperm, gen)
}

// FillUniform fills t in place with U[from, to) drawn from gen, outside autograd (for
// initialization).
func (s *Scope) FillUniform(gen *Generator, t *Tensor, from, to float64) {
	s.fill("fill_uniform", opUniform, gen, t, from, to)
}

// FillNormal fills t in place with N(mean, std²) drawn from gen, outside autograd.
func (s *Scope) FillNormal(gen *Generator, t *Tensor, mean, std float64) {
	s.fill("fill_normal", opNormal, gen, t, mean, std)
}

func (s *Scope) fill(op string, code int32, gen *Generator, t *Tensor, a, b float64) {
	if !s.args(op, []*Tensor{t}) || !s.checkFloat(op, "tensor", t) {
		return
	}
	if gen == nil || gen.dev != t.device {
		s.failf(op, CodeArgument, "need a generator on %s", t.device)
		return
	}
	s.dbls(a, b)
	s.run0(op, code, gen)
}
