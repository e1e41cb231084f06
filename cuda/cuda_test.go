package cuda_test

import (
	"testing"

	"pfl/cuda"
	"pfl/internal/testenv"
)

func TestCUDADeviceInfo(t *testing.T) {
	dev := testenv.RequireCUDA(t)
	n, err := cuda.CUDADeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("device count %d, %v", n, err)
	}
	name, err := cuda.CUDADeviceName(dev.Index)
	if err != nil || name == "" {
		t.Fatalf("device name %q, %v", name, err)
	}
	free, total, err := cuda.CUDAMemInfo(dev.Index)
	if err != nil || free <= 0 || total < free {
		t.Fatalf("mem info free=%d total=%d, %v", free, total, err)
	}
	t.Logf("%s: %.1f of %.1f GiB free", name, float64(free)/(1<<30), float64(total)/(1<<30))
	s := newScope(t)
	x := s.Ones(cuda.Float32, dev, 1<<20)
	if err := cuda.Synchronize(dev); err != nil {
		t.Fatal(err)
	}
	alloc, peak, err := cuda.CUDAMemoryStats(dev.Index, false)
	if err != nil || alloc < 4<<20 || peak < alloc {
		t.Fatalf("memory stats allocated=%d peak=%d, %v (a 4 MiB tensor is live)", alloc, peak, err)
	}
	// exact in fp32 whatever the summation order: every partial sum of ones is an integer
	// ≤ 2^20 < 2^24, so no addition rounds
	if v := values(t, s, s.Sum(x, false))[0]; v != 1<<20 {
		t.Fatalf("sum of ones on the device = %g", v)
	}
}

// TestCUDAGraphReplayMatchesEager captures a whole SGD step of the MLP (forward,
// autograd.grad, foreach update) issued op by op from Go, replays it, and compares the
// parameters with the same steps run eagerly.
func TestCUDAGraphReplayMatchesEager(t *testing.T) {
	dev := testenv.RequireCUDA(t)
	const steps, lr = 5, 0.1
	err := cuda.Pinned(func() error {
		host := newScope(t)
		xh, yh := twoGaussians(host, 21, 128)
		run := func(graph bool) [][]float64 {
			m := newMLP(t, 8, 2, 32, 2, cuda.Float32)
			defer m.close()
			s := cuda.NewScope()
			defer s.Close()
			var params []*cuda.Tensor
			for _, p := range m.params {
				q := s.ToDevice(s.Detach(p), dev)
				q.SetRequiresGrad(true)
				params = append(params, q)
			}
			dm := &mlp{params: params}
			x, y := s.ToDevice(xh, dev), s.ToDevice(yh, dev)
			st, err := cuda.NewStream(dev)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			// The copies above ran on the default stream; the side stream must see them.
			if err := cuda.Synchronize(dev); err != nil {
				t.Fatal(err)
			}
			s.SetStream(st)
			step := func(sc *cuda.Scope) {
				loss := sc.CrossEntropy(dm.forward(sc, x), y, nil, cuda.ReduceMean, 0)
				g := sc.Grad([]*cuda.Tensor{loss}, nil, params, cuda.GradOptions{})
				sc.ForeachAdd(params, g, -lr)
			}
			if !graph {
				for i := 0; i < steps; i++ {
					step(s)
				}
			} else {
				step(s) // warm-up on the side stream, as CUDA graphs require
				st.Synchronize()
				g, err := cuda.NewGraph()
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				if err := g.CaptureBegin(st); err != nil {
					t.Fatal(err)
				}
				step(s)
				if err := g.CaptureEnd(); err != nil {
					t.Fatal(err)
				}
				// capture recorded the step without running it: warm-up + steps-1 replays
				for i := 0; i < steps-1; i++ {
					if err := g.Replay(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := st.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			var out [][]float64
			for _, p := range params {
				out = append(out, values(t, s, p))
			}
			return out
		}
		eager, replayed := run(false), run(true)
		// Replay runs the captured kernels on the same data; what may differ is only the
		// summation order in fp32 (u = 2^-24), where the libraries pick another algorithm
		// or split under capture. A reordered sum of n terms moves by at most n·u·Σ|terms|;
		// the longest here is the batch (n = 128) in the weight gradients: ≤ 7.6e-6 of the
		// gradient's scale (|g| ≲ 1 for this MLP at lr 0.1). Five steps of lr·g then differ
		// by ≲ 5·0.1·7.6e-6 ≈ 4e-6 absolute, and the relative error carried through the
		// later steps' forward passes stays ≲ 5·7.6e-6 ≈ 4e-5: atol 1e-5 and rtol 1e-4 hold
		// both with a margin of 2 or more (identical orders give identical bits).
		for i := range eager {
			closeEnough(t, "param", replayed[i], eager[i], 1e-5, 1e-4)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCUDAGraphFollowsReseededGenerator captures a dropout draw from a registered
// generator on the thread's current stream (SetCurrentStream), then replays it after each
// Reseed: every replay must equal the eager draw of a new generator with that seed, which
// is what lets one captured training step serve every round.
func TestCUDAGraphFollowsReseededGenerator(t *testing.T) {
	dev := testenv.RequireCUDA(t)
	err := cuda.Pinned(func() error {
		eager := func(seed uint64) []float64 {
			g, err := cuda.NewGenerator(seed, dev)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s := newScope(t)
			return values(t, s, s.Dropout(g, s.Ones(cuda.Float32, dev, 1000), 0.5, true))
		}
		st, err := cuda.NewStream(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := cuda.SetCurrentStream(dev, st); err != nil {
			t.Fatal(err)
		}
		defer cuda.SetCurrentStream(dev, nil)
		gen, err := cuda.NewGenerator(1, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer gen.Close()
		s := newScope(t)
		ones := s.Ones(cuda.Float32, dev, 1000)
		out := s.Zeros(cuda.Float32, dev, 1000)
		step := func(sc *cuda.Scope) { sc.CopyFrom(out, sc.Dropout(gen, ones, 0.5, true)) }
		step(s) // warm-up
		g, err := cuda.NewGraph()
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if err := g.Register(gen); err != nil {
			t.Fatal(err)
		}
		if err := g.CaptureBegin(st); err != nil {
			t.Fatal(err)
		}
		step(s)
		if err := g.CaptureEnd(); err != nil {
			t.Fatal(err)
		}
		for _, seed := range []uint64{11, 12, 11} {
			if err := gen.Reseed(seed); err != nil {
				t.Fatal(err)
			}
			if err := g.Replay(); err != nil {
				t.Fatal(err)
			}
			want := eager(seed)
			got := values(t, s, out)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("seed %d: replayed draw %d = %g, eager %g", seed, i, got[i], want[i])
				}
			}
		}
		return s.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCUDABF16Autocast(t *testing.T) {
	dev := testenv.RequireCUDA(t)
	testAutocast(t, dev)
}

// TestCPUBF16Autocast checks the same autocast path on the CPU, which libtorch supports
// for matmul-like ops in bf16.
func TestCPUBF16Autocast(t *testing.T) { testAutocast(t, cuda.CPU) }

func testAutocast(t *testing.T, dev cuda.Device) {
	s := newScope(t)
	g, _ := cuda.NewGenerator(5, dev)
	defer g.Close()
	a := s.Randn(g, cuda.Float32, dev, 64, 128)
	b := s.Randn(g, cuda.Float32, dev, 128, 32)
	ref := s.MatMul(a, b)
	s.SetAutocast(cuda.BFloat16)
	low := s.MatMul(a, b)
	s.SetAutocast(cuda.Float32)
	after := s.MatMul(a, b)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if low.DType() != cuda.BFloat16 {
		t.Fatalf("matmul under autocast has dtype %s, want bf16", low.DType())
	}
	if after.DType() != cuda.Float32 {
		t.Fatalf("autocast leaked past the scope's setting: %s", after.DType())
	}
	// Error analysis of rel = ‖low − ref‖²_F / ‖ref‖²_F, for a, b with N(0,1) entries and
	// contraction length n = 128. bf16 keeps 8 significant bits: unit roundoff u = 2^-8
	// (fp32: 2^-24). Each rounding multiplies a value by (1+δ), |δ| ≤ u, the δ independent
	// with zero mean, so a sum of rounding errors adds in variance, E δ² ≤ u². One output
	// c = Σ_k a_k·b_k (E c² = n) collects, to first order:
	//   - operands a, b rounded to bf16: Σ_k a_k b_k (δa_k + δb_k), variance ≤ 2u²·n;
	//   - products, if rounded to bf16 before they are added: ≤ u²·n;
	//   - accumulation. oneDNN (libtorch's CPU path where AVX-512 is present) and cuBLAS
	//     accumulate in fp32: ≤ n²·2^-48, negligible. libtorch 1.13's own GEMM (its CPU
	//     path without AVX-512, e.g. on Zen 2) adds each product into the bf16 output, so
	//     step k rounds a partial sum s_k with E s_k² = k: variance ≤ u²·Σ_k k = u²·n(n+1)/2.
	//     Blocked or split-K sums in bf16 round fewer, smaller partial sums: less;
	//   - the result rounded to bf16: ≤ u²·n.
	// Dividing by E c² = n: E rel ≤ u²·((n+1)/2 + 4) = 68.5·u² ≈ 1.0e-3 with bf16
	// accumulation (the bound takes E δ² = u²; rounding to nearest gives ≈ u²/6, so typical
	// values are ≈ 12·u² ≈ 1.8e-4 with bf16 accumulation and ≈ 0.5·u² ≈ 8e-6 with fp32;
	// measured: 1.7e-4 with libtorch's own GEMM, 8.5e-6 with oneDNN's).
	// rel averages 64·32 outputs, so it stays close to its expectation; the bound doubles
	// the worst case for margin: rel ≤ 2·u²·((n+1)/2 + 4) ≈ 2.1e-3, which a wrong result
	// (rel ≈ 1) still fails by far. Below: the output rounding alone gives E rel ≈ u²/6
	// ≈ 2.5e-6, while fp32 arithmetic would give at most ≈ 2^-48·((n+1)/2 + 4) ≈ 2.4e-13,
	// so rel > u²/100 shows the matmul really ran in (or was rounded to) bf16.
	const n, u = 128, 1.0 / 256
	upper, lower := 2*u*u*(float64(n+1)/2+4), u*u/100
	rv, lv := values(t, s, ref), values(t, s, low)
	var num, den float64
	for i := range rv {
		num += (lv[i] - rv[i]) * (lv[i] - rv[i])
		den += rv[i] * rv[i]
	}
	rel := num / den
	t.Logf("squared relative error of the bf16 matmul: %.3g (%.2f·u²)", rel, rel/(u*u))
	if !(rel > lower && rel <= upper) {
		t.Fatalf("squared relative error of bf16 matmul %.3g, want (%.2g, %.2g]", rel, lower, upper)
	}
}
