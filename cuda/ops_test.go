package cuda_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"pfl/cuda"
)

// opCase builds one op's result from small hand-written inputs; want was computed by hand
// (or by the formula in the comment).
type opCase struct {
	name  string
	build func(s *cuda.Scope) *cuda.Tensor
	shape []int64
	want  []float64
}

func runOpCases(t *testing.T, cases []opCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScope(t)
			got := c.build(s)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			shapeIs(t, c.name, got, c.shape...)
			closeEnough(t, c.name, values(t, s, got), c.want, 1e-6, 1e-6)
		})
	}
}

var m23 = []float64{1, 2, 3, 4, 5, 6} // [[1 2 3] [4 5 6]]

func TestElementwise(t *testing.T) {
	runOpCases(t, []opCase{
		{"add/broadcast-row", func(s *cuda.Scope) *cuda.Tensor {
			return s.Add(f64(s, m23, 2, 3), f64(s, []float64{10, 20, 30}))
		}, []int64{2, 3}, []float64{11, 22, 33, 14, 25, 36}},
		{"add/non-contiguous", func(s *cuda.Scope) *cuda.Tensor {
			// [[1 3 5] [2 4 6]] is the transpose of [[1 2] [3 4] [5 6]]
			tr := s.Transpose(f64(s, m23, 3, 2), 0, 1)
			return s.Add(tr, f64(s, m23, 2, 3))
		}, []int64{2, 3}, []float64{2, 5, 8, 6, 9, 12}},
		{"add-scaled", func(s *cuda.Scope) *cuda.Tensor {
			return s.AddScaled(f64(s, []float64{1, 2}), f64(s, []float64{3, 4}), -2)
		}, []int64{2}, []float64{-5, -6}},
		{"sub/outer-broadcast", func(s *cuda.Scope) *cuda.Tensor {
			return s.Sub(f64(s, []float64{10, 20}, 2, 1), f64(s, []float64{1, 2, 3}, 1, 3))
		}, []int64{2, 3}, []float64{9, 8, 7, 19, 18, 17}},
		{"mul", func(s *cuda.Scope) *cuda.Tensor {
			return s.Mul(f64(s, m23, 2, 3), f64(s, []float64{2, 0.5}, 2, 1))
		}, []int64{2, 3}, []float64{2, 4, 6, 2, 2.5, 3}},
		{"div", func(s *cuda.Scope) *cuda.Tensor {
			return s.Div(f64(s, []float64{1, 2, 3}), f64(s, []float64{2, 4, 8}))
		}, []int64{3}, []float64{0.5, 0.5, 0.375}},
		{"scalar-ops", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{1, 2, 3})
			return s.DivScalar(s.MulScalar(s.AddScalar(x, 1), 3), 2) // (x+1)*3/2
		}, []int64{3}, []float64{3, 4.5, 6}},
		{"pow", func(s *cuda.Scope) *cuda.Tensor { return s.Pow(f64(s, []float64{2, 3}), 3) },
			[]int64{2}, []float64{8, 27}},
		{"sqrt", func(s *cuda.Scope) *cuda.Tensor { return s.Sqrt(f64(s, []float64{4, 2})) },
			[]int64{2}, []float64{2, math.Sqrt2}},
		{"exp-log", func(s *cuda.Scope) *cuda.Tensor {
			return s.Add(s.Exp(f64(s, []float64{0, 1})), s.Log(f64(s, []float64{1, math.E})))
		}, []int64{2}, []float64{1, math.E + 1}},
		{"abs-neg", func(s *cuda.Scope) *cuda.Tensor { return s.Neg(s.Abs(f64(s, []float64{-2, 3}))) },
			[]int64{2}, []float64{-2, -3}},
		{"clamp", func(s *cuda.Scope) *cuda.Tensor { return s.Clamp(f64(s, []float64{-2, 0.5, 3}), -1, 1) },
			[]int64{3}, []float64{-1, 0.5, 1}},
		{"clamp/min-only", func(s *cuda.Scope) *cuda.Tensor {
			return s.Clamp(f64(s, []float64{-2, 0.5, 3}), 0, math.Inf(1))
		}, []int64{3}, []float64{0, 0.5, 3}},
		{"where", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{1, -1, 2})
			return s.Where(s.Gt(x, f64(s, []float64{0})), x, f64(s, []float64{0}))
		}, []int64{3}, []float64{1, 0, 2}},
		{"eq-lt", func(s *cuda.Scope) *cuda.Tensor {
			a, b := f64(s, []float64{1, 2, 3}), f64(s, []float64{1, 3, 2})
			return s.Add(s.To(s.Eq(a, b), cuda.Float64), s.MulScalar(s.To(s.Lt(a, b), cuda.Float64), 2))
		}, []int64{3}, []float64{1, 2, 0}},
		{"masked-fill", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, m23, 2, 3)
			mask := s.Gt(f64(s, []float64{0, 1, 0}), f64(s, []float64{0.5})) // [F T F], broadcast over rows
			return s.MaskedFill(x, mask, -1)
		}, []int64{2, 3}, []float64{1, -1, 3, 4, -1, 6}},
		{"relu-tanh-sigmoid", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{-1, 0.5})
			return s.Cat(0, s.ReLU(x), s.Tanh(x), s.Sigmoid(x))
		}, []int64{6}, []float64{0, 0.5, math.Tanh(-1), math.Tanh(0.5), 1 / (1 + math.E), 1 / (1 + math.Exp(-0.5))}},
		{"gelu", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{1, -0.5})
			return s.Cat(0, s.GELU(x, false), s.GELU(x, true))
		}, []int64{4}, []float64{
			0.5 * (1 + math.Erf(1/math.Sqrt2)), -0.25 * (1 + math.Erf(-0.5/math.Sqrt2)),
			0.5 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(1+0.044715))),
			-0.25 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(-0.5-0.044715*0.125)))}},
	})
}

func TestLinearAlgebra(t *testing.T) {
	runOpCases(t, []opCase{
		{"matmul", func(s *cuda.Scope) *cuda.Tensor {
			return s.MatMul(f64(s, m23, 2, 3), f64(s, []float64{1, 0, 0, 1, 1, 1}, 3, 2))
		}, []int64{2, 2}, []float64{4, 5, 10, 11}},
		{"matmul/transposed-operand", func(s *cuda.Scope) *cuda.Tensor {
			// a^T with a = [[1 2 3] [4 5 6]]: [[1 4] [2 5] [3 6]] @ [[1] [1]]
			return s.MatMul(s.Transpose(f64(s, m23, 2, 3), 0, 1), f64(s, []float64{1, 1}, 2, 1))
		}, []int64{3, 1}, []float64{5, 7, 9}},
		{"matmul/batch-broadcast", func(s *cuda.Scope) *cuda.Tensor {
			a := f64(s, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 2, 2, 3)
			return s.MatMul(a, f64(s, []float64{1, 0, -1}, 3, 1))
		}, []int64{2, 2, 1}, []float64{-2, -2, -2, -2}},
		{"bmm", func(s *cuda.Scope) *cuda.Tensor {
			a := f64(s, []float64{1, 2, 3, 4}, 2, 1, 2)
			b := f64(s, []float64{1, 1, 2, 0}, 2, 2, 1)
			return s.BMM(a, b)
		}, []int64{2, 1, 1}, []float64{3, 6}},
		{"baddbmm", func(s *cuda.Scope) *cuda.Tensor {
			a := f64(s, []float64{1, 2, 3, 4}, 2, 1, 2)
			b := f64(s, []float64{1, 1, 2, 0}, 2, 2, 1)
			c := f64(s, []float64{10, 20}, 2, 1, 1) // per-client bias
			return s.BAddBMM(c, a, b, 0.5, 2)
		}, []int64{2, 1, 1}, []float64{11, 22}},
		{"linear", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, m23, 2, 3)
			w := f64(s, []float64{1, 1, 1, 0, 1, 0}, 2, 3)
			return s.Linear(x, w, f64(s, []float64{0.5, -1}))
		}, []int64{2, 2}, []float64{6.5, 1, 15.5, 4}},
		{"linear/no-bias", func(s *cuda.Scope) *cuda.Tensor {
			return s.Linear(f64(s, m23, 2, 3), f64(s, []float64{1, 0, -1}, 1, 3), nil)
		}, []int64{2, 1}, []float64{-2, -2}},
		{"cdist", func(s *cuda.Scope) *cuda.Tensor {
			a := f64(s, []float64{0, 0, 1, 1}, 2, 2)
			b := f64(s, []float64{3, 4}, 1, 2)
			return s.CDist(a, b, 2)
		}, []int64{2, 1}, []float64{5, math.Sqrt(13)}},
	})
}

func TestNN(t *testing.T) {
	img := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} // 3x3
	runOpCases(t, []opCase{
		{"conv2d", func(s *cuda.Scope) *cuda.Tensor {
			return s.Conv2d(f64(s, img, 1, 1, 3, 3), f64(s, []float64{1, 1, 1, 1}, 1, 1, 2, 2), nil, cuda.Conv2dOptions{})
		}, []int64{1, 1, 2, 2}, []float64{12, 16, 24, 28}},
		{"conv2d/stride-padding-bias", func(s *cuda.Scope) *cuda.Tensor {
			o := cuda.Conv2dOptions{Stride: [2]int64{2, 2}, Padding: [2]int64{1, 1}}
			return s.Conv2d(f64(s, img, 1, 1, 3, 3), f64(s, []float64{1, 1, 1, 1}, 1, 1, 2, 2), f64(s, []float64{100}), o)
		}, []int64{1, 1, 2, 2}, []float64{101, 105, 111, 128}},
		{"conv2d/groups", func(s *cuda.Scope) *cuda.Tensor {
			// two channels, two groups: channel 0 scaled by 1, channel 1 by -1 (1x1 kernels)
			x := f64(s, []float64{1, 2, 3, 4, 5, 6, 7, 8}, 1, 2, 2, 2)
			w := f64(s, []float64{1, -1}, 2, 1, 1, 1)
			return s.Conv2d(x, w, nil, cuda.Conv2dOptions{Groups: 2})
		}, []int64{1, 2, 2, 2}, []float64{1, 2, 3, 4, -5, -6, -7, -8}},
		{"max-pool", func(s *cuda.Scope) *cuda.Tensor {
			return s.MaxPool2d(f64(s, img, 1, 1, 3, 3), [2]int64{2, 2}, [2]int64{1, 1}, [2]int64{})
		}, []int64{1, 1, 2, 2}, []float64{5, 6, 8, 9}},
		{"avg-pool", func(s *cuda.Scope) *cuda.Tensor {
			return s.AvgPool2d(f64(s, img, 1, 1, 3, 3), [2]int64{2, 2}, [2]int64{1, 1}, [2]int64{})
		}, []int64{1, 1, 2, 2}, []float64{3, 4, 6, 7}},
		{"adaptive-avg-pool", func(s *cuda.Scope) *cuda.Tensor {
			return s.AdaptiveAvgPool2d(f64(s, img, 1, 1, 3, 3), 1, 1)
		}, []int64{1, 1, 1, 1}, []float64{5}},
		{"layer-norm/per-row-affine", func(s *cuda.Scope) *cuda.Tensor {
			// rows [1 2 3] and [4 5 6] both normalize to [-a 0 a], a = 1/sqrt(2/3 + eps);
			// row k is scaled by w[k] and shifted by b[k]: a client-stacked affine.
			x := f64(s, m23, 2, 3)
			return s.LayerNorm(x, f64(s, []float64{1, 2}, 2, 1), f64(s, []float64{0, 10}, 2, 1), 1, 1e-5)
		}, []int64{2, 3}, func() []float64 {
			a := 1 / math.Sqrt(2.0/3+1e-5)
			return []float64{-a, 0, a, 10 - 2*a, 10, 10 + 2*a}
		}()},
		{"batch-norm/eval", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{1, 2, 3, 4}, 2, 2) // N=2, C=2
			rm, rv := f64(s, []float64{1, 2}), f64(s, []float64{4, 1})
			return s.BatchNorm(x, f64(s, []float64{2, 1}), f64(s, []float64{0, 1}), rm, rv, false, 0.1, 0)
		}, []int64{2, 2}, []float64{0, 1, 2, 3}}, // (x-rm)/sqrt(rv)*w+b per channel
		{"softmax", func(s *cuda.Scope) *cuda.Tensor { return s.Softmax(f64(s, []float64{1, 2, 3}), 0) },
			[]int64{3}, softmax([]float64{1, 2, 3})},
		{"log-softmax/dim1", func(s *cuda.Scope) *cuda.Tensor { return s.LogSoftmax(f64(s, m23, 2, 3), 1) },
			[]int64{2, 3}, func() []float64 {
				p := softmax([]float64{1, 2, 3})
				r := []float64{math.Log(p[0]), math.Log(p[1]), math.Log(p[2])}
				return append(r, r...)
			}()},
		{"cross-entropy/none", func(s *cuda.Scope) *cuda.Tensor {
			return s.CrossEntropy(f64(s, []float64{1, 2, 0, 0}, 2, 2), i64(s, []int64{1, 0}), nil, cuda.ReduceNone, 0)
		}, []int64{2}, []float64{math.Log(1 + math.Exp(-1)), math.Ln2}},
		{"cross-entropy/weighted-mean", func(s *cuda.Scope) *cuda.Tensor {
			return s.CrossEntropy(f64(s, []float64{1, 2, 0, 0}, 2, 2), i64(s, []int64{1, 0}), f64(s, []float64{1, 3}), cuda.ReduceMean, 0)
		}, nil, []float64{(math.Log(1+math.Exp(-1)) + 3*math.Ln2) / 4}},
		{"cross-entropy/weighted-sum", func(s *cuda.Scope) *cuda.Tensor {
			return s.CrossEntropy(f64(s, []float64{1, 2, 0, 0}, 2, 2), i64(s, []int64{1, 0}), f64(s, []float64{1, 3}), cuda.ReduceSum, 0)
		}, nil, []float64{math.Log(1+math.Exp(-1)) + 3*math.Ln2}},
		{"cross-entropy/label-smoothing", func(s *cuda.Scope) *cuda.Tensor {
			// torch: (1-ε)·(-log p_y) + ε·mean_c(-log p_c); logits [0 0]: both terms log 2
			return s.CrossEntropy(f64(s, []float64{0, 0}, 1, 2), i64(s, []int64{0}), nil, cuda.ReduceMean, 0.2)
		}, nil, []float64{math.Ln2}},
		{"embedding", func(s *cuda.Scope) *cuda.Tensor {
			return s.Embedding(f64(s, m23, 3, 2), i64(s, []int64{2, 0, 2}, 3))
		}, []int64{3, 2}, []float64{5, 6, 1, 2, 5, 6}},
	})
}

func softmax(x []float64) []float64 {
	var z float64
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Exp(v)
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}

func TestReductions(t *testing.T) {
	runOpCases(t, []opCase{
		{"sum/all", func(s *cuda.Scope) *cuda.Tensor { return s.Sum(f64(s, m23, 2, 3), false) }, nil, []float64{21}},
		{"sum/dim1-keepdim", func(s *cuda.Scope) *cuda.Tensor { return s.Sum(f64(s, m23, 2, 3), true, 1) },
			[]int64{2, 1}, []float64{6, 15}},
		{"sum/non-contiguous", func(s *cuda.Scope) *cuda.Tensor {
			return s.Sum(s.Transpose(f64(s, m23, 2, 3), 0, 1), false, 1)
		}, []int64{3}, []float64{5, 7, 9}},
		{"mean/dim0", func(s *cuda.Scope) *cuda.Tensor { return s.Mean(f64(s, m23, 2, 3), false, 0) },
			[]int64{3}, []float64{2.5, 3.5, 4.5}},
		{"amax", func(s *cuda.Scope) *cuda.Tensor { return s.Amax(f64(s, m23, 2, 3), false, 1) },
			[]int64{2}, []float64{3, 6}},
		{"argmax", func(s *cuda.Scope) *cuda.Tensor {
			return s.Argmax(f64(s, []float64{1, 9, 3, 7, 2, 8}, 2, 3), 1, false)
		}, []int64{2}, []float64{1, 2}},
		{"topk/values", func(s *cuda.Scope) *cuda.Tensor {
			v, _ := s.TopK(f64(s, []float64{1, 9, 3, 7}), 2, 0, true, true)
			return v
		}, []int64{2}, []float64{9, 7}},
		{"topk/smallest-indices", func(s *cuda.Scope) *cuda.Tensor {
			_, i := s.TopK(f64(s, []float64{1, 9, 3, 7}), 2, 0, false, true)
			return i
		}, []int64{2}, []float64{0, 2}},
	})
}

func TestShapeOps(t *testing.T) {
	runOpCases(t, []opCase{
		{"reshape/infer", func(s *cuda.Scope) *cuda.Tensor { return s.Reshape(f64(s, m23, 2, 3), 3, -1) },
			[]int64{3, 2}, m23},
		{"view", func(s *cuda.Scope) *cuda.Tensor { return s.View(f64(s, m23, 2, 3), 6) }, []int64{6}, m23},
		{"permute+contiguous", func(s *cuda.Scope) *cuda.Tensor {
			return s.Contiguous(s.Permute(f64(s, m23, 1, 2, 3), 2, 0, 1))
		}, []int64{3, 1, 2}, []float64{1, 4, 2, 5, 3, 6}},
		{"reshape/of-transpose-copies", func(s *cuda.Scope) *cuda.Tensor {
			return s.Reshape(s.Transpose(f64(s, m23, 2, 3), 0, 1), 6)
		}, []int64{6}, []float64{1, 4, 2, 5, 3, 6}},
		{"expand", func(s *cuda.Scope) *cuda.Tensor { return s.Expand(f64(s, []float64{1, 2}, 2, 1), 2, 3) },
			[]int64{2, 3}, []float64{1, 1, 1, 2, 2, 2}},
		{"squeeze-unsqueeze", func(s *cuda.Scope) *cuda.Tensor {
			return s.Unsqueeze(s.Squeeze(f64(s, m23, 2, 1, 3), 1), 0)
		}, []int64{1, 2, 3}, m23},
		{"flatten", func(s *cuda.Scope) *cuda.Tensor { return s.Flatten(f64(s, m23, 1, 2, 3), 1, 2) },
			[]int64{1, 6}, m23},
		{"cat/dim1", func(s *cuda.Scope) *cuda.Tensor {
			return s.Cat(1, f64(s, []float64{1, 2}, 2, 1), f64(s, []float64{3, 4, 5, 6}, 2, 2))
		}, []int64{2, 3}, []float64{1, 3, 4, 2, 5, 6}},
		{"stack", func(s *cuda.Scope) *cuda.Tensor {
			return s.Stack(1, f64(s, []float64{1, 2}), f64(s, []float64{3, 4}))
		}, []int64{2, 2}, []float64{1, 3, 2, 4}},
		{"narrow", func(s *cuda.Scope) *cuda.Tensor { return s.Narrow(f64(s, m23, 2, 3), 1, 1, 2) },
			[]int64{2, 2}, []float64{2, 3, 5, 6}},
		{"slice/step", func(s *cuda.Scope) *cuda.Tensor { return s.Slice(f64(s, m23, 6), 0, 1, 6, 2) },
			[]int64{3}, []float64{2, 4, 6}},
		{"select", func(s *cuda.Scope) *cuda.Tensor { return s.Select(f64(s, m23, 2, 3), 1, -1) },
			[]int64{2}, []float64{3, 6}},
		{"index-select", func(s *cuda.Scope) *cuda.Tensor {
			return s.IndexSelect(f64(s, m23, 2, 3), 1, i64(s, []int64{2, 0}))
		}, []int64{2, 2}, []float64{3, 1, 6, 4}},
		{"gather", func(s *cuda.Scope) *cuda.Tensor {
			return s.Gather(f64(s, m23, 2, 3), 1, i64(s, []int64{2, 2, 0, 1}, 2, 2))
		}, []int64{2, 2}, []float64{3, 3, 4, 5}},
		{"scatter-add", func(s *cuda.Scope) *cuda.Tensor {
			// aggregation over clients: rows 0 and 2 of src add into slot 0, row 1 into slot 1
			x := f64(s, []float64{0, 0, 0, 0}, 2, 2)
			idx := i64(s, []int64{0, 0, 1, 1, 0, 0}, 3, 2)
			return s.ScatterAdd(x, 0, idx, f64(s, m23, 3, 2))
		}, []int64{2, 2}, []float64{6, 8, 3, 4}},
		{"index-copy", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{0, 0, 0, 0, 0, 0}, 3, 2)
			s.IndexCopy(x, 0, i64(s, []int64{2, 0}), f64(s, []float64{1, 2, 3, 4}, 2, 2))
			return x
		}, []int64{3, 2}, []float64{3, 4, 0, 0, 1, 2}},
		{"split", func(s *cuda.Scope) *cuda.Tensor {
			parts := s.Split(f64(s, m23, 2, 3), 1, 1, 2)
			return s.Contiguous(parts[1])
		}, []int64{2, 2}, []float64{2, 3, 5, 6}},
		{"repeat", func(s *cuda.Scope) *cuda.Tensor { return s.Repeat(f64(s, []float64{1, 2}), 2) },
			[]int64{4}, []float64{1, 2, 1, 2}},
	})
}

func TestCreationAndConversion(t *testing.T) {
	runOpCases(t, []opCase{
		{"zeros", func(s *cuda.Scope) *cuda.Tensor { return s.Zeros(cuda.Float32, cuda.CPU, 2) }, []int64{2}, []float64{0, 0}},
		{"ones", func(s *cuda.Scope) *cuda.Tensor { return s.Ones(cuda.Int64, cuda.CPU, 1, 2) }, []int64{1, 2}, []float64{1, 1}},
		{"full", func(s *cuda.Scope) *cuda.Tensor { return s.Full(2.5, cuda.Float64, cuda.CPU, 2) }, []int64{2}, []float64{2.5, 2.5}},
		{"arange", func(s *cuda.Scope) *cuda.Tensor { return s.Arange(1, 2, 0.25, cuda.Float64, cuda.CPU) },
			[]int64{4}, []float64{1, 1.25, 1.5, 1.75}},
		{"to-bf16-rounds", func(s *cuda.Scope) *cuda.Tensor {
			// bf16 keeps 8 significant bits: 1 + 2^-9 rounds to 1, 1 + 2^-7 is exact
			return s.To(f64(s, []float64{1 + 1.0/512, 1 + 1.0/128}), cuda.BFloat16)
		}, []int64{2}, []float64{1, 1 + 1.0/128}},
		{"clone-is-a-copy", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{1, 2})
			c := s.Clone(x)
			s.CopyFrom(x, f64(s, []float64{7})) // broadcast copy into x leaves c alone
			return s.Cat(0, c, x)
		}, []int64{4}, []float64{1, 2, 7, 7}},
		{"detach-shares-memory", func(s *cuda.Scope) *cuda.Tensor {
			x := f64(s, []float64{1, 2})
			d := s.Detach(x)
			s.CopyFrom(d, f64(s, []float64{5, 6}))
			return x
		}, []int64{2}, []float64{5, 6}},
	})
}

func TestForeach(t *testing.T) {
	s := newScope(t)
	xs := []*cuda.Tensor{f64(s, []float64{1, 2}), f64(s, []float64{3})}
	ys := []*cuda.Tensor{f64(s, []float64{10, 20}), f64(s, []float64{30})}
	s.ForeachAdd(xs, ys, 0.1)                                                                  // [2 4] [6]
	s.ForeachScale(xs, 2)                                                                      // [4 8] [12]
	s.ForeachAddScalar(xs, 1)                                                                  // [5 9] [13]
	s.ForeachMul(xs, ys)                                                                       // [50 180] [390]
	s.ForeachAddcmul(xs, ys, ys, 0.01)                                                         // + y²/100: [51 184] [399]
	s.ForeachAddcdiv(xs, ys, []*cuda.Tensor{f64(s, []float64{2, 4}), f64(s, []float64{3})}, 1) // + y/d: [56 189] [409]
	s.ForeachLerp(xs, ys, 0.5)                                                                 // (x+y)/2: [33 104.5] [219.5]
	closeEnough(t, "x0", values(t, s, xs[0]), []float64{33, 104.5}, 1e-9, 1e-12)
	closeEnough(t, "x1", values(t, s, xs[1]), []float64{219.5}, 1e-9, 1e-12)
	r := s.ForeachSqrt([]*cuda.Tensor{f64(s, []float64{4}), f64(s, []float64{9, 16})})
	closeEnough(t, "sqrt1", values(t, s, r[1]), []float64{3, 4}, 1e-12, 0)
	s.ForeachCopy(xs, ys)
	closeEnough(t, "copy", values(t, s, xs[0]), []float64{10, 20}, 0, 0)
	s.ForeachZero(xs)
	closeEnough(t, "zero", values(t, s, xs[1]), []float64{0}, 0, 0)
}

// TestForeachWeightedSum: each target gets Σ_k w_k src[k], for sources of several ranks
// and a float32 source under float64 weights; mismatched shapes are refused by name.
func TestForeachWeightedSum(t *testing.T) {
	s := newScope(t)
	w := f64(s, []float64{0.5, 0.25, 0.25})
	a := s.Reshape(f64(s, []float64{1, 2, 3, 4, 5, 6}), 3, 2) // rows [1 2] [3 4] [5 6]
	b := s.Reshape(f64(s, []float64{8, 4, 12}), 3, 1, 1)
	c := s.To(s.Reshape(f64(s, []float64{1, 2, 3, 4, 5, 6}), 3, 2), cuda.Float32)
	da, db := s.Zeros(cuda.Float64, cuda.CPU, 1, 2), s.Zeros(cuda.Float64, cuda.CPU, 1, 1)
	dc := s.Zeros(cuda.Float32, cuda.CPU, 2)
	s.ForeachWeightedSum([]*cuda.Tensor{da, db, dc}, []*cuda.Tensor{a, b, c}, w)
	closeEnough(t, "a", values(t, s, da), []float64{2.5, 3.5}, 1e-12, 0)
	closeEnough(t, "b", values(t, s, db), []float64{8}, 1e-12, 0)
	closeEnough(t, "float32", values(t, s, dc), []float64{2.5, 3.5}, 1e-6, 0)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.ForeachWeightedSum([]*cuda.Tensor{db}, []*cuda.Tensor{a}, w)
	if err := s.Err(); !errors.Is(err, cuda.ErrShape) || !strings.Contains(err.Error(), "source 0") {
		t.Errorf("a [3, 2] source for a [1, 1] target: %v", err)
	}
}

func TestSDPAMatchesFormula(t *testing.T) {
	// q [1, 2, 2], k and v [1, 3, 2]; softmax(q kᵀ/√2 + mask) v computed in Go.
	q := []float64{1, 0, 0.5, -1}
	k := []float64{1, 1, 0, 1, -1, 0.5}
	v := []float64{1, 2, 3, 4, 5, 6}
	ref := func(mask [2][3]bool, scale float64) []float64 {
		var out []float64
		for i := 0; i < 2; i++ {
			var sc []float64
			for j := 0; j < 3; j++ {
				d := (q[2*i]*k[2*j] + q[2*i+1]*k[2*j+1]) * scale
				if !mask[i][j] {
					d = math.Inf(-1)
				}
				sc = append(sc, d)
			}
			p := softmax(sc)
			for c := 0; c < 2; c++ {
				out = append(out, p[0]*v[c]+p[1]*v[2+c]+p[2]*v[4+c])
			}
		}
		return out
	}
	all := [2][3]bool{{true, true, true}, {true, true, true}}
	causal := [2][3]bool{{true, false, false}, {true, true, false}}
	cases := []struct {
		name  string
		mask  []float64 // nil, or 0/1 to become a bool mask
		opt   cuda.AttentionOptions
		ref   [2][3]bool
		scale float64
	}{
		{"plain", nil, cuda.AttentionOptions{}, all, 1 / math.Sqrt2},
		{"causal", nil, cuda.AttentionOptions{Causal: true}, causal, 1 / math.Sqrt2},
		{"bool-mask-scale", []float64{1, 0, 1, 0, 1, 1}, cuda.AttentionOptions{Scale: 0.3},
			[2][3]bool{{true, false, true}, {false, true, true}}, 0.3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScope(t)
			var mask *cuda.Tensor
			if c.mask != nil {
				mask = s.Gt(f64(s, c.mask, 1, 2, 3), f64(s, []float64{0.5}))
			}
			got := s.SDPA(f64(s, q, 1, 2, 2), f64(s, k, 1, 3, 2), f64(s, v, 1, 3, 2), mask, c.opt)
			closeEnough(t, c.name, values(t, s, got), ref(c.ref, c.scale), 1e-9, 1e-9)
		})
	}
}

func TestRandomStreams(t *testing.T) {
	s := newScope(t)
	draw := func(seed uint64) []float64 {
		g, err := cuda.NewGenerator(seed, cuda.CPU)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		return values(t, s, s.Cat(0, s.Rand(g, cuda.Float64, cuda.CPU, 4), s.Randn(g, cuda.Float64, cuda.CPU, 4)))
	}
	a, b, c := draw(7), draw(7), draw(8)
	closeEnough(t, "same seed", a, b, 0, 0)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("seeds 7 and 8 drew the same values")
	}
	for _, u := range a[:4] {
		if u < 0 || u >= 1 {
			t.Fatalf("rand value %g outside [0, 1)", u)
		}
	}

	g, _ := cuda.NewGenerator(1, cuda.CPU)
	defer g.Close()
	perm := values(t, s, s.RandPerm(g, 10, cuda.CPU))
	seen := map[float64]bool{}
	for _, p := range perm {
		seen[p] = true
	}
	if len(seen) != 10 {
		t.Fatalf("randperm %v is not a permutation of 0..9", perm)
	}
	for _, r := range values(t, s, s.RandInt(g, 3, 5, cuda.CPU, 100)) {
		if r != 3 && r != 4 {
			t.Fatalf("randint value %g outside [3, 5)", r)
		}
	}
	x := s.Zeros(cuda.Float64, cuda.CPU, 1000)
	s.FillUniform(g, x, -2, -1)
	if m := values(t, s, s.Mean(x, false))[0]; math.Abs(m+1.5) > 0.05 {
		t.Fatalf("mean of U[-2,-1) = %g", m)
	}
	s.FillNormal(g, x, 3, 0.1)
	if m := values(t, s, s.Mean(x, false))[0]; math.Abs(m-3) > 0.05 {
		t.Fatalf("mean of N(3, 0.01) = %g", m)
	}
}

func TestDropoutUsesItsGenerator(t *testing.T) {
	s := newScope(t)
	ones := s.Ones(cuda.Float64, cuda.CPU, 2000)
	drop := func(seed uint64) []float64 {
		g, _ := cuda.NewGenerator(seed, cuda.CPU)
		defer g.Close()
		return values(t, s, s.Dropout(g, ones, 0.25, true))
	}
	a, b := drop(3), drop(3)
	closeEnough(t, "same stream, same mask", a, b, 0, 0)
	kept := 0
	for _, v := range a {
		switch v {
		case 0:
		case 1 / 0.75:
			kept++
		default:
			t.Fatalf("dropout value %g is neither 0 nor 1/(1-p)", v)
		}
	}
	if frac := float64(kept) / 2000; math.Abs(frac-0.75) > 0.04 {
		t.Fatalf("kept fraction %g, want about 0.75", frac)
	}
	eval := s.Dropout(nil, ones, 0.25, false)
	closeEnough(t, "eval is identity", values(t, s, eval), values(t, s, ones), 0, 0)
}
