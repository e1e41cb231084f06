package bench

import (
	"fmt"
	"testing"

	"pfl/bench/harness"
	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/fl/algo"
	"pfl/engine/hyper"
	"pfl/engine/model"
)

// Kernel micro-benchmarks: the pieces of a federated round timed alone, at the shapes the
// workloads run. Dimension letters: K stacked clients, B images per client, T tokens,
// H heads of width E, N rows of a linear layer (B·T), P parameters.
//
// Sizes follow workloads(): on CUDA (what gpu.sh runs, PFL_BENCH_DEVICE=cuda) the real
// batch of 64 and the real hypernetwork; on the CPU a batch of 8 and a trunk 16 wide (as
// harness.Workload.Small), so that a CPU run checks the benchmarks in seconds. FLOPs are
// counted as the models count them (matrix products only, 2 per multiply-accumulate) and
// MFU is against the float32 matmul peak of harness.PeakTFLOPS, as in BenchmarkModels.

// BenchmarkKernels times the stacked attention, the stacked linear layer, the
// aggregation of the shared parameters and FedTP's hypernetwork forward and VJP.
func BenchmarkKernels(b *testing.B) {
	dev := device(b)
	batch := int64(8) // keeps CPU runs short, as in workloads
	if dev.IsCUDA() {
		batch = 64
	}
	b.Run("attention", func(b *testing.B) { benchAttention(b, dev, batch) })
	b.Run("linear", func(b *testing.B) { benchLinear(b, dev, batch) })
	b.Run("aggregate", func(b *testing.B) { benchAggregate(b, dev) })
	b.Run("hyper", func(b *testing.B) { benchHyper(b, dev) })
}

// benchAttention times forward and backward of the ViT block's attention as
// model.ViT.block runs it: split the fused Q/K/V [K, B, T, 3·H·E], fold clients into the
// batch and heads out ([K·B, H, T, E]), cuda.Scope.SDPA, and back to [K, B, T, H·E]; the
// backward is one VJP to the Q/K/V activations.
//
// FLOPs: Q·Kᵀ and A·V are T²·E multiply-accumulates each per head and image, so the
// forward is 4·T²·E FLOPs and the backward, four products of that size (dV = Aᵀ·dO,
// dA = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q), twice that: 12·K·B·H·T²·E per step. Softmax,
// scaling and the permutes are not counted, nor a fused kernel's recomputation of Q·Kᵀ
// in the backward.
func benchAttention(b *testing.B, dev cuda.Device, batch int64) {
	for _, c := range []struct {
		name       string
		k, t, h, e int64
	}{
		{"tiny-vit", 5, 65, 8, 64}, // FedTP: 32×32 in patches of 4, 64 + class token; 8 heads of 64
		{"vit-s16", 8, 197, 6, 64}, // FedPerfix: 224×224 in patches of 16, 196 + class token; 6 heads of 64
	} {
		b.Run(fmt.Sprintf("%s/K%d/B%d", c.name, c.k, batch), func(b *testing.B) {
			checkHandles(b)
			g := generator(b, dev)
			defer g.Close()
			k, t, h, e := c.k, c.t, c.h, c.e
			inner := h * e
			s := cuda.NewScope()
			defer s.Close()
			qkv := s.Randn(g, cuda.Float32, dev, k, batch, t, 3*inner)
			dout := s.Randn(g, cuda.Float32, dev, k, batch, t, inner)
			requireGrad(b, s, qkv)
			heads := func(s *cuda.Scope, z *cuda.Tensor) *cuda.Tensor { // [K, B, T, H·E] -> [K·B, H, T, E]
				return s.Reshape(s.Permute(s.Reshape(z, k, batch, t, h, e), 0, 1, 3, 2, 4), k*batch, h, t, e)
			}
			timeKernel(b, dev, func(s *cuda.Scope) {
				q := s.Split(qkv, -1, inner, inner, inner)
				if s.Err() != nil {
					return
				}
				a := s.SDPA(heads(s, q[0]), heads(s, q[1]), heads(s, q[2]), nil, cuda.AttentionOptions{})
				a = s.Reshape(s.Permute(s.Reshape(a, k, batch, h, t, e), 0, 1, 3, 2, 4), k, batch, t, inner)
				s.Grad([]*cuda.Tensor{a}, []*cuda.Tensor{dout}, []*cuda.Tensor{qkv}, cuda.GradOptions{})
			})
			flops := 12 * float64(k*batch*h*t*t*e)
			reportCompute(b, dev, flops, float64(k*batch))
		})
	}
}

// benchLinear times forward and backward of the client-stacked linear layer
// y = x·Wᵀ + b per client: x [K, N, in], W [K, out, in], b [K, out], one batched matmul
// (BAddBMM with the bias, BMM without), as model's linear runs it (unexported, so its
// two calls are repeated here). The backward is one VJP to x, W and b.
//
// FLOPs: the forward is 2·K·N·in·out and the backward, dX = dY·W and dW = dYᵀ·X, twice
// that: 6·K·N·in·out per step (the bias is not counted).
func benchLinear(b *testing.B, dev cuda.Device, batch int64) {
	for _, c := range []struct {
		name          string
		k, t, in, out int64
		bias          bool
	}{
		{"tiny-vit-qkv", 5, 65, 128, 3 * 8 * 64, false}, // FedTP's fused Q/K/V, no bias
		{"vit-s16-fc1", 8, 197, 384, 4 * 384, true},     // ViT-S's first MLP layer
	} {
		b.Run(fmt.Sprintf("%s/K%d/B%d", c.name, c.k, batch), func(b *testing.B) {
			checkHandles(b)
			g := generator(b, dev)
			defer g.Close()
			n := batch * c.t
			s := cuda.NewScope()
			defer s.Close()
			x := s.Randn(g, cuda.Float32, dev, c.k, n, c.in)
			w := s.MulScalar(s.Randn(g, cuda.Float32, dev, c.k, c.out, c.in), 0.05)
			dy := s.Randn(g, cuda.Float32, dev, c.k, n, c.out)
			inputs := []*cuda.Tensor{x, w}
			var bias *cuda.Tensor
			if c.bias {
				bias = s.Zeros(cuda.Float32, dev, c.k, c.out)
				inputs = append(inputs, bias)
			}
			requireGrad(b, s, inputs...)
			timeKernel(b, dev, func(s *cuda.Scope) {
				wt := s.Transpose(w, 1, 2)
				var y *cuda.Tensor
				if bias != nil {
					y = s.BAddBMM(s.Unsqueeze(bias, 1), x, wt, 1, 1)
				} else {
					y = s.BMM(x, wt)
				}
				s.Grad([]*cuda.Tensor{y}, []*cuda.Tensor{dy}, inputs, cuda.GradOptions{})
			})
			flops := 6 * float64(c.k*n*c.in*c.out)
			reportCompute(b, dev, flops, float64(c.k*batch))
		})
	}
}

// benchAggregate times the server's averaging of the shared parameters into one row each:
// foreach as fl.Run's aggregate does it (cuda's ForeachWeightedSum, one call, a
// matrix-vector product per tensor), per-tensor as the reference (fl.WeightedMean and a
// copy per tensor). The parameters are those neither personal nor generated, over a
// stacked model of K clients. tiny-vit is FedTP's CIFAR-100 model at K = 5, under FedAvg (everything shared)
// and FedTP (Q/K/V generated); vit-s16 (CUDA only) is FedPerfix's at K = 8 under
// vanilla-attn.
//
// The reduction is memory-bound (2 FLOPs per 4-byte element read), so it reports GB/s and
// no FLOP rate: bytes are the minimum the reduction moves, K rows read and one written,
// (K+1)·P·4. WeightedMean's Mul-then-Sum moves (3K+1)·P·4, 2.7 times that at K = 5.
func benchAggregate(b *testing.B, dev cuda.Device) {
	type aggregation struct {
		preset, alg string
		k           int
		strat       fl.Strategy
	}
	cases := []aggregation{
		{"tiny-vit", "fedavg", 5, algo.FedAvg()},
		{"tiny-vit", "fedtp", 5, &algo.FedTP{}},
	}
	if dev.IsCUDA() {
		cases = append(cases, aggregation{"vit-s16", "vanilla-attn", 8, algo.VanillaAttention()})
	}
	for _, c := range cases {
		for _, foreach := range []bool{false, true} {
			how := "per-tensor"
			if foreach {
				how = "foreach"
			}
			b.Run(fmt.Sprintf("%s/K%d/%s/%s", c.preset, c.k, c.alg, how), func(b *testing.B) {
				checkHandles(b)
				g := generator(b, dev)
				defer g.Close()
				m, err := model.Build(model.Spec{Preset: c.preset, Classes: 100}, c.k, dev, cuda.Float32, g) // CIFAR-100
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				var generated func(*model.Param) bool
				if gen, ok := c.strat.(fl.GenerateStage); ok {
					generated = gen.GenerateHooks().Generated
				}
				var shared []*cuda.Tensor
				var elems int64
				for _, p := range m.Params().List {
					if c.strat.Personal(p) || (generated != nil && generated(p)) {
						continue
					}
					shared = append(shared, p.T)
					elems += p.Numel()
				}
				samples := make([]int, c.k)
				for i := range samples {
					samples[i] = 1000 - 100*i // unequal, as after a Dirichlet split
				}
				s := cuda.NewScope()
				defer s.Close()
				w := cuda.FromSlice(s, dev, fl.Weights(samples))
				var dst []*cuda.Tensor
				for _, t := range shared {
					d := s.Zeros(t.DType(), t.Device(), append([]int64{1}, t.Shape()[1:]...)...)
					dst = append(dst, d)
				}
				timeKernel(b, dev, func(s *cuda.Scope) {
					s.SetGradEnabled(false) // as in fl.Run's aggregate
					if foreach {            // what fl.Run does: one call for every shared parameter
						s.ForeachWeightedSum(dst, shared, w)
						return
					}
					for i, t := range shared {
						s.CopyFrom(dst[i], fl.WeightedMean(s, t, w))
					}
				})
				bytes := float64(int64(c.k+1) * elems * 4)
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				b.ReportMetric(float64(elems), "params/op")
			})
		}
	}
}

// benchHyper times FedTP's server side for the default tiny-vit (depth 6) at K = 5 of 50
// clients (fedtp-c100-50), through the FedTP strategy bound to the model's Q/K/V: the
// batched forward h(φ; z_i) of the round's clients (FedTP.Generate) and
//   - vjp: one vector-Jacobian product to φ and z with the weighted ΔW as grad_outputs
//     (hyper.Net.Gradient);
//   - update: Algorithm 1's whole update (FedTP.Learn: ΔW, that VJP, the SGD step with
//     momentum and weight decay over every hypernetwork parameter).
//
// FLOPs: per client the trunk is Embed·Hidden + (Layers−1)·Hidden² multiply-accumulates
// and the heads Hidden·P_gen (P_gen: the generated elements, 6 blocks × 1536×128); the
// forward is 2·K times that and the VJP, input and weight gradients of every linear
// layer, twice the forward, 6·K·MACs in all (biases and the SGD step are not counted).
// At K = 5 the heads' products do 2.5 FLOPs per byte of their weights, so they are
// memory-bound; GB/s counts the heads' weights read in the forward and the backward and
// their gradient written (3·4·Hidden·P_gen bytes), and for update also the SGD step's
// minimum traffic (read φ, its gradient and momentum; write momentum and φ: 5·4·|φ|).
func benchHyper(b *testing.B, dev cuda.Device) {
	const clients, k = 50, 5
	hidden := int64(16) // as harness.Workload.Small: at 150 the heads alone are 0.7 GB, with gradient and momentum 2 GB
	if dev.IsCUDA() {
		hidden = 150 // FedTP's ViTHyper
	}
	for _, mode := range []string{"vjp", "update"} {
		b.Run(fmt.Sprintf("tiny-vit/K%d/hidden%d/%s", k, hidden, mode), func(b *testing.B) {
			checkHandles(b)
			g := generator(b, dev)
			defer g.Close()
			// declared only (nil generator): Bind reads the parameters' names, roles and shapes
			m, err := model.Build(model.Spec{Preset: "tiny-vit", Classes: 100}, 1, dev, cuda.Float32, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			f := &algo.FedTP{Hyper: hyper.Config{Hidden: hidden}}
			fed := &data.Federated{Part: data.Partition{Train: make([][]int, clients)}}
			if err := f.Bind(fl.Env{Fed: fed, Model: m, Device: dev, DType: cuda.Float32, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			net := f.Net()

			s := cuda.NewScope()
			defer s.Close()
			s.SetGradEnabled(false)
			rows := cuda.FromSlice(s, dev, []int64{3, 11, 24, 30, 47}) // the round's clients
			w := cuda.FromSlice(s, dev, fl.Weights([]int{1000, 900, 800, 700, 600}))
			// stand-ins for the clients' trained weights W_iᴱ and the changes ΔW_i
			var trained, delta []*cuda.Tensor
			var pgen int64
			for _, t := range net.Targets {
				shape := append([]int64{k}, t.Shape...)
				delta = append(delta, s.MulScalar(s.Randn(g, cuda.Float32, dev, shape...), 1e-3))
				trained = append(trained, s.Randn(g, cuda.Float32, dev, shape...))
				pgen += numel(t.Shape)
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
			timeKernel(b, dev, func(s *cuda.Scope) {
				gen := f.Generate(s, rows)
				if mode == "vjp" {
					net.Gradient(s, gen, delta, w)
				} else {
					f.LearnApply(s, f.LearnSum(s, gen, trained, w))
				}
			})
			c := net.Cfg
			macs := c.Embed*c.Hidden + int64(c.Layers-1)*c.Hidden*c.Hidden + c.Hidden*pgen
			reportCompute(b, dev, 6*float64(k*macs), 0)
			bytes := 3 * 4 * float64(c.Hidden*pgen)
			if mode == "update" {
				bytes += 5 * 4 * float64(net.Count())
			}
			b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// timeKernel runs step once untimed (warm-up: cuBLAS handles, allocator growth), then
// in b.Loop on a scope reset before each step and a device synchronize after it, so that
// the time is the device's (kernels are asynchronous) and every step's tensors are freed.
func timeKernel(b *testing.B, dev cuda.Device, step func(s *cuda.Scope)) {
	b.Helper()
	s := cuda.NewScope()
	defer s.Close()
	run := func() {
		s.Reset()
		step(s)
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		if err := cuda.Synchronize(dev); err != nil {
			b.Fatal(err)
		}
	}
	run()
	for b.Loop() {
		run()
	}
}

// reportCompute reports TFLOP/s and MFU% for flops per step, and samples/s for samples
// per step (none when 0), as BenchmarkModels does.
func reportCompute(b *testing.B, dev cuda.Device, flops, samples float64) {
	b.Helper()
	n, secs := float64(b.N), b.Elapsed().Seconds()
	if samples > 0 {
		b.ReportMetric(samples*n/secs, "samples/s")
	}
	tflops := flops * n / secs / 1e12
	b.ReportMetric(tflops, "TFLOP/s")
	peak, err := harness.PeakTFLOPS(dev, cuda.Float32) // the kernels run in float32
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(100*tflops/peak, "MFU%")
}

// checkHandles fails b if it ends with more live tensors or generators than it began with.
func checkHandles(b *testing.B) {
	b.Helper()
	tensors, gens := cuda.LiveTensors(), cuda.LiveGenerators()
	b.Cleanup(func() {
		if dt, dg := cuda.LiveTensors()-tensors, cuda.LiveGenerators()-gens; dt != 0 || dg != 0 {
			b.Errorf("%d tensor and %d generator handles left live", dt, dg)
		}
	})
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

func generator(b *testing.B, dev cuda.Device) *cuda.Generator {
	b.Helper()
	g, err := cuda.NewGenerator(1, dev)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// requireGrad makes ts (made by s) autograd leaves, after checking s's ops succeeded.
func requireGrad(b *testing.B, s *cuda.Scope, ts ...*cuda.Tensor) {
	b.Helper()
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	for _, t := range ts {
		if err := t.SetRequiresGrad(true); err != nil {
			b.Fatal(err)
		}
	}
}
