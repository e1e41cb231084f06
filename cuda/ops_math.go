package cuda

import "math"

func (s *Scope) binary(op string, code int32, a, b *Tensor, dbls ...float64) *Tensor {
	if !s.args(op, []*Tensor{a, b}) || !s.checkBroadcast(op, a, b) {
		return nil
	}
	s.dbls(dbls...)
	return s.run1(op, code, nil)
}

func (s *Scope) unary(op string, code int32, a *Tensor, dbls ...float64) *Tensor {
	if !s.args(op, []*Tensor{a}) {
		return nil
	}
	s.dbls(dbls...)
	return s.run1(op, code, nil)
}

// Add is a + b (broadcasting).
func (s *Scope) Add(a, b *Tensor) *Tensor { return s.binary("add", opAdd, a, b, 1) }

// AddScaled is a + alpha*b (broadcasting).
func (s *Scope) AddScaled(a, b *Tensor, alpha float64) *Tensor {
	return s.binary("add", opAdd, a, b, alpha)
}

// Sub is a - b (broadcasting).
func (s *Scope) Sub(a, b *Tensor) *Tensor { return s.binary("sub", opSub, a, b, 1) }

// Mul is a * b elementwise (broadcasting).
func (s *Scope) Mul(a, b *Tensor) *Tensor { return s.binary("mul", opMul, a, b) }

// Div is a / b elementwise (broadcasting).
func (s *Scope) Div(a, b *Tensor) *Tensor { return s.binary("div", opDiv, a, b) }

// AddScalar is a + v.
func (s *Scope) AddScalar(a *Tensor, v float64) *Tensor {
	return s.unary("add_scalar", opAddScalar, a, v)
}

// MulScalar is a * v.
func (s *Scope) MulScalar(a *Tensor, v float64) *Tensor {
	return s.unary("mul_scalar", opMulScalar, a, v)
}

// DivScalar is a / v.
func (s *Scope) DivScalar(a *Tensor, v float64) *Tensor {
	return s.unary("div_scalar", opDivScalar, a, v)
}

// Pow is a raised to the power e elementwise.
func (s *Scope) Pow(a *Tensor, e float64) *Tensor { return s.unary("pow", opPowScalar, a, e) }

// Neg is -a.
func (s *Scope) Neg(a *Tensor) *Tensor { return s.unary("neg", opNeg, a) }

// Exp is e^a elementwise.
func (s *Scope) Exp(a *Tensor) *Tensor { return s.unary("exp", opExp, a) }

// Log is the natural logarithm elementwise.
func (s *Scope) Log(a *Tensor) *Tensor { return s.unary("log", opLog, a) }

// Abs is |a| elementwise.
func (s *Scope) Abs(a *Tensor) *Tensor { return s.unary("abs", opAbs, a) }

// Sqrt is the square root elementwise.
func (s *Scope) Sqrt(a *Tensor) *Tensor { return s.unary("sqrt", opSqrt, a) }

// Clamp limits a to [lo, hi]; an infinite bound (math.Inf(-1) or math.Inf(1)) is no bound.
func (s *Scope) Clamp(a *Tensor, lo, hi float64) *Tensor {
	if !s.args("clamp", []*Tensor{a}) {
		return nil
	}
	if lo > hi {
		return s.failf("clamp", CodeArgument, "lower bound %g above upper bound %g", lo, hi)
	}
	s.ints(b2i(!math.IsInf(lo, -1)), b2i(!math.IsInf(hi, 1)))
	s.dbls(lo, hi)
	return s.run1("clamp", opClamp, nil)
}

// Where picks a where cond (bool) is true and b elsewhere (broadcasting).
func (s *Scope) Where(cond, a, b *Tensor) *Tensor {
	const op = "where"
	if !s.args(op, []*Tensor{cond, a, b}) || !s.checkDType(op, "condition", cond, Bool) ||
		!s.checkBroadcast(op, a, b) || !s.checkBroadcast(op, cond, a) {
		return nil
	}
	return s.run1(op, opWhere, nil)
}

// Eq is a == b elementwise (bool).
func (s *Scope) Eq(a, b *Tensor) *Tensor { return s.binary("eq", opEq, a, b) }

// Lt is a < b elementwise (bool).
func (s *Scope) Lt(a, b *Tensor) *Tensor { return s.binary("lt", opLt, a, b) }

// Gt is a > b elementwise (bool).
func (s *Scope) Gt(a, b *Tensor) *Tensor { return s.binary("gt", opGt, a, b) }

// MaskedFill is x with v wherever mask (bool, broadcastable to x) is true.
func (s *Scope) MaskedFill(x, mask *Tensor, v float64) *Tensor {
	const op = "masked_fill"
	if !s.args(op, []*Tensor{x, mask}) || !s.checkDType(op, "mask", mask, Bool) || !s.checkBroadcast(op, x, mask) {
		return nil
	}
	s.dbls(v)
	return s.run1(op, opMaskedFill, nil)
}

// MatMul is the matrix product with numpy semantics: batched over leading dims, which
// broadcast; 1-D operands are vectors.
func (s *Scope) MatMul(a, b *Tensor) *Tensor {
	const op = "matmul"
	if !s.args(op, []*Tensor{a, b}) || !s.checkSameDType(op, a, b) {
		return nil
	}
	if len(a.shape) == 0 || len(b.shape) == 0 {
		return s.failf(op, CodeShape, "scalar operand: %v @ %v", a.shape, b.shape)
	}
	k := a.shape[len(a.shape)-1]
	kb := b.shape[0]
	if len(b.shape) >= 2 {
		kb = b.shape[len(b.shape)-2]
	}
	if k != kb {
		return s.failf(op, CodeShape, "inner dims differ: %v @ %v", a.shape, b.shape)
	}
	if len(a.shape) > 2 && len(b.shape) > 2 {
		if _, ok := broadcast(a.shape[:len(a.shape)-2], b.shape[:len(b.shape)-2]); !ok {
			return s.failf(op, CodeShape, "batch dims do not broadcast: %v @ %v", a.shape, b.shape)
		}
	}
	return s.run1(op, opMatmul, nil)
}

// BMM is the batched product of a [B, n, k] and b [B, k, m]: [B, n, m].
func (s *Scope) BMM(a, b *Tensor) *Tensor {
	const op = "bmm"
	if !s.args(op, []*Tensor{a, b}) || !s.checkSameDType(op, a, b) ||
		!s.checkRank(op, "a", a, 3) || !s.checkRank(op, "b", b, 3) {
		return nil
	}
	if a.shape[0] != b.shape[0] || a.shape[2] != b.shape[1] {
		return s.failf(op, CodeShape, "cannot multiply %v by %v", a.shape, b.shape)
	}
	return s.run1(op, opBmm, nil)
}

// BAddBMM is beta*c + alpha*(a @ b) for a [B, n, k], b [B, k, m], c broadcastable to
// [B, n, m]: a client-stacked linear layer with its bias in one kernel.
func (s *Scope) BAddBMM(c, a, b *Tensor, beta, alpha float64) *Tensor {
	const op = "baddbmm"
	if !s.args(op, []*Tensor{c, a, b}) || !s.checkSameDType(op, c, a, b) ||
		!s.checkRank(op, "a", a, 3) || !s.checkRank(op, "b", b, 3) {
		return nil
	}
	if a.shape[0] != b.shape[0] || a.shape[2] != b.shape[1] {
		return s.failf(op, CodeShape, "cannot multiply %v by %v", a.shape, b.shape)
	}
	if bs, ok := broadcast(c.shape, []int64{a.shape[0], a.shape[1], b.shape[2]}); !ok || len(bs) != 3 {
		return s.failf(op, CodeShape, "c %v does not broadcast to [%d %d %d]", c.shape, a.shape[0], a.shape[1], b.shape[2])
	}
	s.dbls(beta, alpha)
	return s.run1(op, opBaddbmm, nil)
}

// Linear is x w^T + b for x [..., in], w [out, in], b [out] (b may be nil).
func (s *Scope) Linear(x, w, b *Tensor) *Tensor {
	const op = "linear"
	if !s.args(op, []*Tensor{x, w}, b) || !s.checkSameDType(op, x, w, b) || !s.checkRank(op, "weight", w, 2) {
		return nil
	}
	if x.Dim() == 0 || x.shape[len(x.shape)-1] != w.shape[1] {
		return s.failf(op, CodeShape, "input %v does not fit weight %v", x.shape, w.shape)
	}
	if b != nil && (b.Dim() != 1 || b.shape[0] != w.shape[0]) {
		return s.failf(op, CodeShape, "bias %v does not fit weight %v", b.shape, w.shape)
	}
	return s.run1(op, opLinear, nil)
}

// CDist is the p-norm distance between each row of a [..., P, M] and of b [..., R, M]:
// [..., P, R].
func (s *Scope) CDist(a, b *Tensor, p float64) *Tensor {
	const op = "cdist"
	if !s.args(op, []*Tensor{a, b}) || !s.checkFloat(op, "a", a) {
		return nil
	}
	if a.Dim() < 2 || b.Dim() < 2 || a.Size(-1) != b.Size(-1) {
		return s.failf(op, CodeShape, "rows of %v and %v differ in length", a.shape, b.shape)
	}
	s.dbls(p)
	return s.run1(op, opCdist, nil)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
