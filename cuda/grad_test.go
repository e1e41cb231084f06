package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"pfl/cuda"
)

// gradCase is a differentiable function of some float64 inputs. The test compares the
// autograd gradient of L = Σ out ⊙ R (R fixed random) with central finite differences.
type gradCase struct {
	name     string
	shapes   [][]int64
	positive bool // draw inputs from [0.5, 1.5) (log, sqrt, div)
	f        func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor
}

func gradCases() []gradCase {
	target := func(s *cuda.Scope) *cuda.Tensor { return i64(s, []int64{2, 0, 1}) }
	conv := func(o cuda.Conv2dOptions) func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
		return func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor { return s.Conv2d(x[0], x[1], x[2], o) }
	}
	dropGen := func(s *cuda.Scope) *cuda.Generator {
		g, _ := cuda.NewGenerator(11, cuda.CPU) // same mask on every evaluation
		return g
	}
	return []gradCase{
		{"add-broadcast", [][]int64{{2, 3}, {3}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor { return s.Add(x[0], x[1]) }},
		{"sub-scaled", [][]int64{{2, 3}, {2, 1}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Sub(x[0], s.AddScaled(x[1], x[1], 2))
		}},
		{"mul-div", [][]int64{{2, 3}, {2, 3}}, true, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Div(s.Mul(x[0], x[1]), s.AddScalar(x[1], 1))
		}},
		{"exp-log-sqrt-pow", [][]int64{{4}}, true, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Add(s.Add(s.Exp(x[0]), s.Log(x[0])), s.Add(s.Sqrt(x[0]), s.Pow(x[0], 3)))
		}},
		{"matmul-transposed", [][]int64{{3, 2}, {3, 4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.MatMul(s.Transpose(x[0], 0, 1), x[1])
		}},
		{"bmm", [][]int64{{2, 2, 3}, {2, 3, 2}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor { return s.BMM(x[0], x[1]) }},
		{"baddbmm", [][]int64{{2, 1, 2}, {2, 2, 3}, {2, 3, 2}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.BAddBMM(x[0], x[1], x[2], 0.5, 1.5)
		}},
		{"linear", [][]int64{{2, 3}, {4, 3}, {4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor { return s.Linear(x[0], x[1], x[2]) }},
		{"conv2d", [][]int64{{1, 2, 4, 4}, {3, 2, 3, 3}, {3}}, false, conv(cuda.Conv2dOptions{Padding: [2]int64{1, 1}})},
		{"conv2d-grouped-strided", [][]int64{{1, 4, 5, 5}, {4, 2, 2, 2}, {4}}, false, conv(cuda.Conv2dOptions{Stride: [2]int64{2, 2}, Groups: 2})},
		{"pools", [][]int64{{1, 2, 4, 4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			a := s.Flatten(s.MaxPool2d(x[0], [2]int64{2, 2}, [2]int64{}, [2]int64{}), 0, -1)
			b := s.Flatten(s.AvgPool2d(x[0], [2]int64{3, 3}, [2]int64{1, 1}, [2]int64{1, 1}), 0, -1)
			c := s.Flatten(s.AdaptiveAvgPool2d(x[0], 1, 1), 0, -1)
			return s.Cat(0, a, b, c)
		}},
		{"layer-norm-per-row-affine", [][]int64{{2, 3, 4}, {2, 1, 4}, {2, 1, 4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.LayerNorm(x[0], x[1], x[2], 1, 1e-5)
		}},
		{"batch-norm-train", [][]int64{{4, 3}, {3}, {3}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.BatchNorm(x[0], x[1], x[2], nil, nil, true, 0.1, 1e-5)
		}},
		{"softmax-logsoftmax", [][]int64{{2, 4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Add(s.Softmax(x[0], 1), s.LogSoftmax(x[0], 0))
		}},
		{"gelu-tanh-sigmoid", [][]int64{{5}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Cat(0, s.GELU(x[0], false), s.GELU(x[0], true), s.Tanh(x[0]), s.Sigmoid(x[0]))
		}},
		{"relu-clamp-away-from-kinks", [][]int64{{4}}, true, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Add(s.ReLU(s.AddScalar(x[0], -0.1)), s.Clamp(x[0], 0, 10))
		}},
		{"dropout-fixed-stream", [][]int64{{6}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			g := dropGen(s)
			defer g.Close()
			return s.Dropout(g, x[0], 0.5, true)
		}},
		{"cross-entropy-weighted-smoothed", [][]int64{{3, 4}, {3}}, true, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.CrossEntropy(x[0], target(s), x[1], cuda.ReduceMean, 0.1)
		}},
		{"sdpa-masked", [][]int64{{2, 3, 4}, {2, 5, 4}, {2, 5, 3}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			m := s.Gt(f64(s, []float64{1, 1, 0, 1, 1}), f64(s, []float64{0.5}))
			return s.SDPA(x[0], x[1], x[2], m, cuda.AttentionOptions{})
		}},
		{"sdpa-causal", [][]int64{{1, 3, 2}, {1, 3, 2}, {1, 3, 2}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.SDPA(x[0], x[1], x[2], nil, cuda.AttentionOptions{Causal: true})
		}},
		{"embedding-index-gather", [][]int64{{4, 3}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			e := s.Flatten(s.Embedding(x[0], i64(s, []int64{3, 1, 3})), 0, -1)
			is := s.Flatten(s.IndexSelect(x[0], 1, i64(s, []int64{2, 2})), 0, -1)
			g := s.Flatten(s.Gather(x[0], 0, i64(s, []int64{0, 3, 1}, 1, 3)), 0, -1)
			return s.Cat(0, e, is, g)
		}},
		{"shape-ops", [][]int64{{2, 3, 4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			p := s.Reshape(s.Permute(x[0], 2, 0, 1), 4, 6)
			n := s.Narrow(p, 1, 1, 4)
			sel := s.Expand(s.Unsqueeze(s.Select(x[0], 1, 2), 0), 3, 2, 4)
			parts := s.Split(x[0], 2, 1, 3)
			st := s.Stack(0, parts[0], s.Slice(parts[1], 2, 1, 3, 2))
			return s.Cat(0, s.Flatten(n, 0, -1), s.Flatten(sel, 0, -1), s.Flatten(st, 0, -1), s.Flatten(s.Repeat(p, 1, 2), 0, -1))
		}},
		{"reductions", [][]int64{{3, 4}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.Cat(0, s.Sum(x[0], false, 1), s.Mean(x[0], false, 0), s.Amax(x[0], false, 1))
		}},
		{"where-masked-fill", [][]int64{{6}, {6}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			c := s.Gt(f64(s, []float64{1, 0, 1, 0, 0, 1}), f64(s, []float64{0.5}))
			return s.Add(s.Where(c, x[0], x[1]), s.MaskedFill(x[0], c, 2))
		}},
		{"cdist", [][]int64{{3, 2}, {2, 2}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor { return s.CDist(x[0], x[1], 2) }},
		{"scatter-add", [][]int64{{2, 2}, {3, 2}}, false, func(s *cuda.Scope, x []*cuda.Tensor) *cuda.Tensor {
			return s.ScatterAdd(x[0], 0, i64(s, []int64{0, 1, 1, 0, 0, 0}, 3, 2), x[1])
		}},
	}
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for ci, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 1))
			data := make([][]float64, len(c.shapes))
			for i, sh := range c.shapes {
				n := 1
				for _, d := range sh {
					n *= int(d)
				}
				data[i] = make([]float64, n)
				for j := range data[i] {
					if c.positive {
						data[i][j] = 0.5 + rng.Float64()
					} else {
						data[i][j] = 2*rng.Float64() - 1
					}
				}
			}
			var r []float64 // the fixed random cotangent, sized on first use
			loss := func(s *cuda.Scope, xs []*cuda.Tensor) *cuda.Tensor {
				out := c.f(s, xs)
				if s.Err() != nil {
					t.Fatal(s.Err())
				}
				if r == nil {
					r = make([]float64, out.Numel())
					for j := range r {
						r[j] = 2*rng.Float64() - 1
					}
				}
				return s.Sum(s.Mul(out, f64(s, r, out.Shape()...)), false)
			}
			eval := func() float64 {
				s := cuda.NewScope()
				defer s.Close()
				s.SetGradEnabled(false)
				xs := make([]*cuda.Tensor, len(data))
				for i := range data {
					xs[i] = f64(s, data[i], c.shapes[i]...)
				}
				return values(t, s, loss(s, xs))[0]
			}

			s := newScope(t)
			xs := make([]*cuda.Tensor, len(data))
			for i := range data {
				xs[i] = f64(s, data[i], c.shapes[i]...)
				if err := xs[i].SetRequiresGrad(true); err != nil {
					t.Fatal(err)
				}
			}
			grads := s.Grad([]*cuda.Tensor{loss(s, xs)}, nil, xs, cuda.GradOptions{})
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			const eps = 1e-6
			for i := range data {
				got := values(t, s, grads[i])
				want := make([]float64, len(data[i]))
				for j := range data[i] {
					orig := data[i][j]
					data[i][j] = orig + eps
					up := eval()
					data[i][j] = orig - eps
					down := eval()
					data[i][j] = orig
					want[j] = (up - down) / (2 * eps)
				}
				closeEnough(t, c.name+"/input"+string(rune('0'+i)), got, want, 1e-6, 1e-5)
			}
		})
	}
}

// mlp is a two-layer perceptron y = W2 tanh(W1 x + b1) + b2, used by the VJP, lifetime,
// thread and end-to-end tests.
type mlp struct {
	params []*cuda.Tensor // W1 [h, in], b1 [h], W2 [out, h], b2 [out]; caller-owned
}

func newMLP(t testing.TB, seed uint64, in, hidden, out int64, dt cuda.DType) *mlp {
	t.Helper()
	s := cuda.NewScope()
	defer s.Close()
	g, err := cuda.NewGenerator(seed, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	shapes := [][]int64{{hidden, in}, {hidden}, {out, hidden}, {out}}
	fans := []float64{float64(in), float64(in), float64(hidden), float64(hidden)}
	m := &mlp{}
	for i, sh := range shapes {
		p := s.Zeros(dt, cuda.CPU, sh...)
		bound := 1 / math.Sqrt(fans[i]) // PyTorch's nn.Linear default
		s.FillUniform(g, p, -bound, bound)
		s.Keep(p)
		m.params = append(m.params, p)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.params {
		if err := p.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func (m *mlp) forward(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor {
	h := s.Tanh(s.Linear(x, m.params[0], m.params[1]))
	return s.Linear(h, m.params[2], m.params[3])
}

func (m *mlp) close() {
	for _, p := range m.params {
		p.Close()
	}
}

// sgdStep does one full-batch SGD step in its own scope and returns the loss.
func (m *mlp) sgdStep(s *cuda.Scope, x, y *cuda.Tensor, lr float64) float64 {
	loss := s.CrossEntropy(m.forward(s, x), y, nil, cuda.ReduceMean, 0)
	grads := s.Grad([]*cuda.Tensor{loss}, nil, m.params, cuda.GradOptions{})
	s.ForeachAdd(m.params, grads, -lr)
	if s.Err() != nil {
		return math.NaN()
	}
	v, _ := loss.Item()
	return v
}

func TestVJPMatchesFiniteDifferenceJacobian(t *testing.T) {
	// Two outputs (as FedTP has one generated weight per block): y = mlp(x) and z = y²,
	// cotangents v and w. VJP_j = Σ_o (∂o/∂θ_j)ᵀ v_o, checked against central differences
	// of θ ↦ <y, v> + <z, w>.
	m := newMLP(t, 5, 3, 4, 2, cuda.Float64)
	defer m.close()
	s := newScope(t)
	x := f64(s, []float64{0.1, -0.2, 0.3, 0.5, 0.4, -0.6, -1, 0.2, 0.7, 0.3, 0.3, 0.3, 0.9, -0.8, 0.1}, 5, 3)
	v := f64(s, []float64{1, -2, 0.5, 0.3, -1, 1, 2, 0.1, -0.4, 0.7}, 5, 2)
	w := f64(s, []float64{0.2, 0.4, -0.1, 1, 0.5, -0.5, 0.3, 0.3, -0.9, 0.6}, 5, 2)
	y := m.forward(s, x)
	z := s.Pow(y, 2)
	vjp := s.Grad([]*cuda.Tensor{y, z}, []*cuda.Tensor{v, w}, m.params, cuda.GradOptions{})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	vv, wv := values(t, s, v), values(t, s, w)
	objective := func() float64 {
		es := cuda.NewScope()
		defer es.Close()
		es.SetGradEnabled(false)
		yv := values(t, es, m.forward(es, x))
		var o float64
		for i := range yv {
			o += yv[i]*vv[i] + yv[i]*yv[i]*wv[i]
		}
		return o
	}
	const eps = 1e-6
	for j, p := range m.params {
		pv := values(t, s, p)
		want := make([]float64, len(pv))
		for k := range pv {
			set := func(val float64) {
				es := cuda.NewScope()
				defer es.Close()
				es.SetGradEnabled(false)
				pv[k] = val
				es.CopyFrom(p, f64(es, pv, p.Shape()...))
			}
			orig := pv[k]
			set(orig + eps)
			up := objective()
			set(orig - eps)
			down := objective()
			set(orig)
			want[k] = (up - down) / (2 * eps)
		}
		closeEnough(t, "vjp/param"+string(rune('0'+j)), values(t, s, vjp[j]), want, 1e-7, 1e-6)
	}
}

func TestGradAllowUnusedAndBackwardAccumulates(t *testing.T) {
	s := newScope(t)
	a := f64(s, []float64{1, 2})
	b := f64(s, []float64{3, 4})
	a.SetRequiresGrad(true)
	b.SetRequiresGrad(true)
	out := s.Sum(s.Mul(a, a), false) // does not depend on b
	g := s.Grad([]*cuda.Tensor{out}, nil, []*cuda.Tensor{a, b}, cuda.GradOptions{AllowUnused: true, RetainGraph: true})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if g[1] != nil {
		t.Fatalf("unused input got gradient %v", g[1])
	}
	closeEnough(t, "d(a·a)/da", values(t, s, g[0]), []float64{2, 4}, 0, 0)

	s.Backward([]*cuda.Tensor{out}, nil, true)
	s.Backward([]*cuda.Tensor{out}, nil, false)
	closeEnough(t, "accumulated", values(t, s, s.GradOf(a)), []float64{4, 8}, 0, 0)
	if s.GradOf(b) != nil {
		t.Fatal("b has a gradient")
	}
	if err := cuda.ZeroGrad(false, a, b); err != nil {
		t.Fatal(err)
	}
	closeEnough(t, "zeroed", values(t, s, s.GradOf(a)), []float64{0, 0}, 0, 0)
	if err := cuda.ZeroGrad(true, a); err != nil {
		t.Fatal(err)
	}
	if s.GradOf(a) != nil {
		t.Fatal("set-to-none left a gradient")
	}
}

func TestNoGradScopeRecordsNothing(t *testing.T) {
	s := newScope(t)
	a := f64(s, []float64{1, 2})
	a.SetRequiresGrad(true)
	s.SetGradEnabled(false)
	y := s.MulScalar(a, 2)
	if y.RequiresGrad() {
		t.Fatal("op under no-grad requires grad")
	}
	s.SetGradEnabled(true)
	if !s.MulScalar(a, 2).RequiresGrad() {
		t.Fatal("op with grad enabled does not require grad")
	}
}
