package kernels_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
)

// TestMain fails fast, with the build command, when the native library is missing.
func TestMain(m *testing.M) {
	if err := cuda.Load(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// u32 and u64 are the unit roundoffs of float32 and float64.
const (
	u32 = 0x1p-24
	u64 = 0x1p-53
)

// devices are the devices the library has: the CPU (where a kernel is its C++ reference)
// and, in a CUDA build on a machine with a GPU, cuda:0 (its CUDA version).
func devices(t testing.TB) []cuda.Device {
	t.Helper()
	info, err := cuda.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	devs := []cuda.Device{cuda.CPU}
	if info.CUDAAvailable {
		devs = append(devs, cuda.CUDA(0))
	}
	return devs
}

// newScope returns a scope closed at the end of the test, and checks there that the test
// left no tensor handle alive.
func newScope(t testing.TB) *cuda.Scope {
	t.Helper()
	live := cuda.LiveTensors()
	s := cuda.NewScope()
	t.Cleanup(func() {
		s.Close()
		if d := cuda.LiveTensors() - live; d != 0 {
			t.Errorf("%d tensor handles left alive", d)
		}
	})
	return s
}

func float32s(t testing.TB, s *cuda.Scope, x *cuda.Tensor) []float32 {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// randomImages is a set of n images with every pixel value drawn uniformly from 0..255.
func randomImages(n, c, h, w int, seed uint64) *data.Images {
	r := rand.New(rand.NewPCG(seed, 1))
	x := &data.Images{Name: "random", N: n, C: c, H: h, W: w, Classes: 10,
		Pixels: make([]uint8, n*c*h*w), Labels: make([]int64, n)}
	for i := range x.Pixels {
		x.Pixels[i] = uint8(r.IntN(256))
	}
	for i := range x.Labels {
		x.Labels[i] = int64(r.IntN(10))
	}
	return x
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// imageBatchCase is one geometry and augmentation of the image-batch comparison.
type imageBatchCase struct {
	name       string
	c, h, w    int // stored geometry (h ≠ w catches swapped axes)
	channels   int // served channels (3 from a grey set); 0: stored
	mean, std  []float64
	pad        int
	flip       bool
	k, b, pool int // clients, batch, images per client
}

var imageBatchCases = []imageBatchCase{
	{name: "rgb-crop-flip", c: 3, h: 9, w: 11, mean: []float64{0.49, 0.48, 0.45}, std: []float64{0.25, 0.24, 0.26}, pad: 3, flip: true, k: 3, b: 4, pool: 10},
	{name: "grey-plain", c: 1, h: 7, w: 7, mean: []float64{0.29}, std: []float64{0.35}, k: 2, b: 5, pool: 7},
	{name: "grey-as-rgb-flip", c: 1, h: 6, w: 5, channels: 3, mean: []float64{0.5}, std: []float64{0.5}, flip: true, k: 2, b: 3, pool: 5},
	{name: "rgb-crop-only", c: 3, h: 8, w: 8, mean: []float64{0.5, 0.4, 0.3}, std: []float64{0.2, 0.3, 0.4}, pad: 4, k: 4, b: 2, pool: 3},
}

// plan is a round's batch plan for c: k clients with pool images each, one epoch.
func (c imageBatchCase) plan(t testing.TB) *data.Plan {
	t.Helper()
	ids, parts := make([]int, c.k), make([][]int, c.k)
	for i := range ids {
		ids[i] = i
		for j := range c.pool {
			parts[i] = append(parts[i], i*c.pool+j)
		}
	}
	p, err := data.NewPlan(ids, parts, data.PlanConfig{Epochs: 1, Batch: c.b, Shuffle: true,
		Augment: data.Augment{Pad: c.pad, Flip: c.flip}, Seed: 7, Round: 3})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// batchArgs are the kernel's inputs for step of p on dev: the step's rows of the plan.
func batchArgs(s *cuda.Scope, dev cuda.Device, p *data.Plan, step int, c imageBatchCase, channels int) cuda.ImageBatchArgs {
	lo, hi := step*p.K*p.B, (step+1)*p.K*p.B
	a := cuda.ImageBatchArgs{
		Index:    cuda.FromSlice(s, dev, p.Index[lo:hi], int64(p.K), int64(p.B)),
		Mean:     cuda.FromSlice(s, dev, toF32(c.mean)),
		Std:      cuda.FromSlice(s, dev, toF32(c.std)),
		Pad:      int64(c.pad),
		Channels: int64(channels),
	}
	if c.pad > 0 {
		a.DY = cuda.FromSlice(s, dev, p.DY[lo:hi], int64(p.K), int64(p.B))
		a.DX = cuda.FromSlice(s, dev, p.DX[lo:hi], int64(p.K), int64(p.B))
	}
	if c.flip {
		a.Flip = cuda.FromSlice(s, dev, p.Flip[lo:hi], int64(p.K), int64(p.B))
	}
	return a
}

// TestImageBatchMatchesEngine holds the image-batch kernel against engine/data's batch
// assembly from libtorch ops (DeviceImages.Batch) for the same plan: the same indices, crop
// offsets and flips, every step of a round.
//
// On the CPU both compute float32(u)/255, then (v − mean)/std, each operation rounded once:
// bit-identical. On CUDA libtorch may divide by 255 as a product with the rounded
// reciprocal, (|Δv| ≤ 3u·v ≤ 3u with u = 2⁻²⁴, v ≤ 1); the subtraction and the division
// each round once on both sides (2u|d| and 2u|o|, d = v − mean, o = d/std), and the
// difference in v passes through the division: |Δo| ≤ (3u + 2u|d|)/std + 2u|o|
// = 3u/std + 4u|o| ≤ 4u(1/std + |o|), the bound used there. There the CUDA version must
// also equal the CPU reference bit for bit (the same IEEE operations in the same order).
func TestImageBatchMatchesEngine(t *testing.T) {
	for _, c := range imageBatchCases {
		t.Run(c.name, func(t *testing.T) {
			x := randomImages(c.k*c.pool, c.c, c.h, c.w, 11)
			p := c.plan(t)
			var ref [][]float32 // the CPU reference, per step
			for _, dev := range devices(t) {
				s := newScope(t)
				d, err := data.UploadWith(x, dev, data.UploadConfig{Mean: c.mean, Std: c.std, Channels: c.channels})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				dp, err := p.Upload(dev, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer dp.Close()
				for step := range p.Steps {
					s.Reset()
					want := float32s(t, s, d.Batch(s, dp, step).X)
					kx := s.KernelImageBatch(d.X, batchArgs(s, dev, p, step, c, d.C))
					got := float32s(t, s, kx)
					if fmt.Sprint(kx.Shape()) != fmt.Sprint([]int64{int64(p.K), int64(p.B), int64(d.C), int64(d.H), int64(d.W)}) {
						t.Fatalf("kernel batch shape %v", kx.Shape())
					}
					if !dev.IsCUDA() {
						sameBits(t, fmt.Sprintf("step %d: kernel vs engine", step), got, want)
						ref = append(ref, got)
						continue
					}
					sameBits(t, fmt.Sprintf("step %d: CUDA kernel vs CPU reference", step), got, ref[step])
					plane := d.H * d.W
					for i := range got {
						sd := float32(c.std[0])
						if len(c.std) > 1 {
							sd = float32(c.std[i/plane%d.C])
						}
						tol := 4 * u32 * (1/float64(sd) + math.Abs(float64(want[i])))
						if math.Abs(float64(got[i])-float64(want[i])) > tol {
							t.Fatalf("step %d element %d: kernel %v, engine %v (bound %.3g)", step, i, got[i], want[i], tol)
						}
					}
				}
			}
		})
	}
}

// sameBits fails unless got and want are equal bit for bit.
func sameBits(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %v (%#08x), want %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestImageBatchFormula checks the kernel against kernels.h's formula computed here in
// float32, on hand-picked offsets: inside the padded window, at its edges, and beyond it
// (which reads further padding), with and without flips, and a grey set served as RGB.
func TestImageBatchFormula(t *testing.T) {
	const n, h, w = 3, 4, 5
	for _, c0 := range []int{1, 3} {
		x := randomImages(n, c0, h, w, 5)
		for _, dev := range devices(t) {
			s := newScope(t)
			const k, b, pad, ch = 2, 3, 2, 3
			index := []int64{2, 0, 1, 1, 2, 0}
			dy := []int64{0, 4, 2, -1, 7, 3}
			dx := []int64{4, 0, 2, 9, -3, 1}
			flip := []bool{true, false, true, false, true, true}
			mean, std := []float32{0.1, 0.5, 0.9}, []float32{0.3, 0.2, 0.7}
			img := cuda.FromSlice(s, dev, x.Pixels, n, int64(c0), h, w)
			out := s.KernelImageBatch(img, cuda.ImageBatchArgs{
				Index: cuda.FromSlice(s, dev, index, k, b),
				DY:    cuda.FromSlice(s, dev, dy, k, b), DX: cuda.FromSlice(s, dev, dx, k, b),
				Flip: cuda.FromSlice(s, dev, flip, k, b),
				Mean: cuda.FromSlice(s, dev, mean), Std: cuda.FromSlice(s, dev, std),
				Pad: pad, Channels: ch,
			})
			got := float32s(t, s, out)
			i := 0
			for r := range k * b {
				for c := range ch {
					src := c
					if c0 == 1 {
						src = 0
					}
					for y := range h {
						for xx := range w {
							sx := xx
							if flip[r] {
								sx = w - 1 - xx
							}
							sy, sx := y+int(dy[r])-pad, sx+int(dx[r])-pad
							v := float32(0)
							if sy >= 0 && sy < h && sx >= 0 && sx < w {
								v = float32(x.Pixels[((int(index[r])*c0+src)*h+sy)*w+sx]) / 255
							}
							want := (v - mean[c]) / std[c]
							if math.Float32bits(got[i]) != math.Float32bits(want) {
								t.Fatalf("%v, %d stored channels: row %d channel %d (%d, %d) = %v, want %v", dev, c0, r, c, y, xx, got[i], want)
							}
							i++
						}
					}
				}
			}
		}
	}
}

// TestImageBatchErrors checks the argument checks and, on the CPU, the index check.
func TestImageBatchErrors(t *testing.T) {
	s := newScope(t)
	img := cuda.FromSlice(s, cuda.CPU, make([]uint8, 2*3*4*4), 2, 3, 4, 4)
	ms := cuda.FromSlice(s, cuda.CPU, []float32{0.5})
	idx := cuda.FromSlice(s, cuda.CPU, []int64{0, 1, 2, 1}, 2, 2) // 2 is out of range
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		a    cuda.ImageBatchArgs
		want error
	}{
		{"index out of range", cuda.ImageBatchArgs{Index: idx, Mean: ms, Std: ms, Channels: 3}, cuda.ErrIndex},
		{"flip not bool", cuda.ImageBatchArgs{Index: idx, Flip: idx, Mean: ms, Std: ms, Channels: 3}, cuda.ErrShape},
		{"two channels from three", cuda.ImageBatchArgs{Index: idx, Mean: ms, Std: ms, Channels: 2}, cuda.ErrShape},
		{"no std", cuda.ImageBatchArgs{Index: idx, Mean: ms, Channels: 3}, cuda.ErrArgument},
	} {
		s2 := cuda.NewScope()
		if s2.KernelImageBatch(img, c.a) != nil || !errors.Is(s2.Err(), c.want) {
			t.Errorf("%s: error %v, want %v", c.name, s2.Err(), c.want)
		}
		s2.Close()
	}
}

// weightedSumShapes are client-stacked parameter shapes, [K] + the global row: a bias, a
// LayerNorm row, a conv kernel, one larger than the CUDA version's 2,048-element chunk,
// and an empty one between them.
var weightedSumShapes = [][]int64{{1}, {1, 5}, {3, 4, 5}, {0, 3}, {7, 2049}, {2}}

// weightedSumInputs makes K client rows per shape with mixed magnitudes and signs, and the
// FedAvg weights of unequal clients as a float64 tensor (both paths convert it).
func weightedSumInputs(s *cuda.Scope, dev cuda.Device, dt cuda.DType, k int) (dst, ref, src []*cuda.Tensor, w *cuda.Tensor) {
	r := rand.New(rand.NewPCG(3, uint64(k)))
	for _, shape := range weightedSumShapes {
		n := int64(k)
		for _, d := range shape {
			n *= d
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2))
		}
		full := append([]int64{int64(k)}, shape...)
		x := s.To(cuda.FromSlice(s, dev, v, full...), dt)
		src = append(src, x)
		row := append([]int64{1}, shape...)
		dst = append(dst, s.Zeros(dt, dev, row...))
		ref = append(ref, s.Zeros(dt, dev, row...))
	}
	samples := make([]int, k)
	for i := range samples {
		samples[i] = 37 + 91*i%113
	}
	w = cuda.FromSlice(s, dev, fl.Weights(samples))
	return dst, ref, src, w
}

// fmaChain is kernels.h's order computed exactly on the host: acc = fma(w_k, x_k, acc) from
// acc = 0, each step rounded once to float32 (f32) or float64. big.Float holds w·x + acc
// exactly before the one rounding: 512 bits cover the 106 bits of a product and the few
// dozen binades between the test's magnitudes.
func fmaChain(w, x []float64, f32 bool) float64 {
	acc := 0.0
	for k := range w {
		z := new(big.Float).SetPrec(512).SetFloat64(w[k])
		z.Mul(z, new(big.Float).SetFloat64(x[k]))
		z.Add(z, new(big.Float).SetFloat64(acc))
		if f32 {
			f, _ := z.Float32()
			acc = float64(f)
		} else {
			acc, _ = z.Float64()
		}
	}
	return acc
}

// TestWeightedSumMatchesAverageInto holds the aggregation kernel against fl.AverageInto
// (one libtorch matrix-vector product per tensor, in BLAS's summation order) and against
// its own stated order.
//
// Both compute Σ_k w_k x_k over the same K rounded weights. Any evaluation order of a dot
// product of length K, with products rounded or fused, is within γ_K Σ_k |w_k x_k| of the
// exact sum (γ_K = K·u/(1 − K·u); Higham, Accuracy and Stability of Numerical Algorithms,
// §3.1); so the two results are within 2γ_K Σ_k |w_k x_k| of each other, elementwise. The
// kernel itself must equal the exact host model of its order (fmaChain) bit for bit, on
// every device.
func TestWeightedSumMatchesAverageInto(t *testing.T) {
	for _, dt := range []cuda.DType{cuda.Float32, cuda.Float64} {
		for _, k := range []int{1, 5, 16} {
			for _, dev := range devices(t) {
				t.Run(fmt.Sprintf("%s/K%d/%v", dt, k, dev), func(t *testing.T) {
					s := newScope(t)
					dst, ref, src, w := weightedSumInputs(s, dev, dt, k)
					s.KernelWeightedSum(dst, src, w)
					if err := fl.AverageInto(s, ref, src, w); err != nil {
						t.Fatal(err)
					}
					u := u64
					if dt == cuda.Float32 {
						u = u32
					}
					gamma := float64(k) * u / (1 - float64(k)*u)
					wf := make([]float64, k) // the weights as both paths use them
					for i, v := range float64s(t, s, s.To(w, dt)) {
						wf[i] = v
					}
					for i := range dst {
						got, want, x := float64s(t, s, dst[i]), float64s(t, s, ref[i]), float64s(t, s, src[i])
						p := len(got)
						col := make([]float64, k)
						for e := range p {
							bound := 0.0
							for j := range k {
								col[j] = x[j*p+e]
								bound += math.Abs(wf[j] * col[j])
							}
							if exact := fmaChain(wf, col, dt == cuda.Float32); got[e] != exact {
								t.Fatalf("tensor %d element %d: kernel %v, its stated order gives %v", i, e, got[e], exact)
							}
							bound *= 2 * gamma * (1 + 1e-9)
							if math.Abs(got[e]-want[e]) > bound {
								t.Fatalf("tensor %d element %d: kernel %v, AverageInto %v (bound %.3g)", i, e, got[e], want[e], bound)
							}
						}
					}
				})
			}
		}
	}
}

func float64s(t testing.TB, s *cuda.Scope, x *cuda.Tensor) []float64 {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWeightedSumAcrossDevices runs the same inputs through the CUDA version and the CPU
// reference and requires bit-identical results (skipped without CUDA).
func TestWeightedSumAcrossDevices(t *testing.T) {
	devs := devices(t)
	if len(devs) < 2 {
		t.Skip("no CUDA device")
	}
	s := newScope(t)
	for _, dt := range []cuda.DType{cuda.Float32, cuda.Float64} {
		dc, _, srcC, wc := weightedSumInputs(s, cuda.CPU, dt, 8)
		dg, _, srcG, wg := weightedSumInputs(s, devs[1], dt, 8)
		s.KernelWeightedSum(dc, srcC, wc)
		s.KernelWeightedSum(dg, srcG, wg)
		for i := range dc {
			a, b := float64s(t, s, dc[i]), float64s(t, s, dg[i])
			for e := range a {
				if math.Float64bits(a[e]) != math.Float64bits(b[e]) {
					t.Fatalf("%s tensor %d element %d: CPU %v, CUDA %v", dt, i, e, a[e], b[e])
				}
			}
		}
	}
}

// TestWeightedSumErrors checks the argument checks.
func TestWeightedSumErrors(t *testing.T) {
	s := newScope(t)
	w := cuda.FromSlice(s, cuda.CPU, []float32{0.5, 0.5})
	d32, d64 := s.Zeros(cuda.Float32, cuda.CPU, 1, 3), s.Zeros(cuda.Float64, cuda.CPU, 1, 3)
	s32, s64 := s.Zeros(cuda.Float32, cuda.CPU, 2, 3), s.Zeros(cuda.Float64, cuda.CPU, 2, 3)
	s3 := s.Zeros(cuda.Float32, cuda.CPU, 3, 3)
	i64 := s.Zeros(cuda.Int64, cuda.CPU, 1, 3)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		dst, src []*cuda.Tensor
		want     error
	}{
		{"mixed types", []*cuda.Tensor{d32, d64}, []*cuda.Tensor{s32, s64}, cuda.ErrDType},
		{"integer", []*cuda.Tensor{i64}, []*cuda.Tensor{s32}, cuda.ErrDType},
		{"three clients for two weights", []*cuda.Tensor{d32}, []*cuda.Tensor{s3}, cuda.ErrShape},
		{"lists differ", []*cuda.Tensor{d32, d32}, []*cuda.Tensor{s32}, cuda.ErrArgument},
	} {
		s2 := cuda.NewScope()
		s2.KernelWeightedSum(c.dst, c.src, w)
		if !errors.Is(s2.Err(), c.want) {
			t.Errorf("%s: error %v, want %v", c.name, s2.Err(), c.want)
		}
		s2.Close()
	}
}
