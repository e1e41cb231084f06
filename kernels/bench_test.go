package kernels_test

import (
	"fmt"
	"os"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// Benchmarks of each kernel beside the libtorch-op path it could replace, on cuda:0 when
// the library sees one (PFL_BENCH_DEVICE=cpu forces the CPU) and at the workloads' shapes
// there; on the CPU, where a kernel is its plain C++ reference, at small shapes so that
// the test command's short benchmark runs stay quick. Numbers from this machine are not
// the kernels' speed: bench/RESULTS.md records measured ones with the device.

func benchDevice(b *testing.B) cuda.Device {
	b.Helper()
	info, err := cuda.Capabilities()
	if err != nil {
		b.Fatal(err)
	}
	if info.CUDAAvailable && os.Getenv("PFL_BENCH_DEVICE") != "cpu" {
		return cuda.CUDA(0)
	}
	return cuda.CPU
}

// timed runs step once to warm up, then b.N times, each followed by a device sync.
func timed(b *testing.B, dev cuda.Device, step func(s *cuda.Scope)) {
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

// BenchmarkImageBatch assembles one step's CIFAR batch (3×32×32, padding 4, flips) for K
// clients: "engine" is DeviceImages.Batch (libtorch ops), "kernel" the fused kernel. It
// reports images/s and the bytes written per second.
func BenchmarkImageBatch(b *testing.B) {
	dev := benchDevice(b)
	k, batch := 5, 8
	if dev.IsCUDA() {
		k, batch = 10, 64 // FedTP's CIFAR runs: 10% of 100 clients, batch 64
	}
	c := imageBatchCase{c: 3, h: 32, w: 32, mean: []float64{0.507, 0.487, 0.441}, std: []float64{0.267, 0.256, 0.276},
		pad: 4, flip: true, k: k, b: batch, pool: batch}
	x := randomImages(k*batch, 3, 32, 32, 1)
	d, err := data.UploadWith(x, dev, data.UploadConfig{Mean: c.mean, Std: c.std})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	p := c.plan(b)
	dp, err := p.Upload(dev, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer dp.Close()
	report := func(b *testing.B) {
		n := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(n*float64(k*batch), "images/s")
		b.ReportMetric(n*float64(k*batch*3*32*32*4)/1e9, "GB/s")
	}
	name := fmt.Sprintf("cifar/K%d/B%d", k, batch)
	b.Run(name+"/engine", func(b *testing.B) {
		timed(b, dev, func(s *cuda.Scope) { d.Batch(s, dp, 0) })
		report(b)
	})
	b.Run(name+"/kernel", func(b *testing.B) {
		s := cuda.NewScope() // the step's rows, uploaded once as a plan holds them
		defer s.Close()
		a := batchArgs(s, dev, p, 0, c, d.C)
		timed(b, dev, func(s *cuda.Scope) { s.KernelImageBatch(d.X, a) })
		report(b)
	})
}

// BenchmarkWeightedSum aggregates every parameter of K stacked clients of FedTP's tiny
// ViT (CIFAR-100 head): "foreach" is fl.AverageInto (one matrix-vector product per
// tensor), "kernel" the one-launch kernel. It reports the bytes read and written per
// second (K+1 copies of the parameters).
func BenchmarkWeightedSum(b *testing.B) {
	dev := benchDevice(b)
	k := 5
	if dev.IsCUDA() {
		k = 10
	}
	g, err := cuda.NewGenerator(1, dev)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	m, err := model.Build(model.Spec{Preset: "tiny-vit", Classes: 100}, k, dev, cuda.Float32, g)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s := cuda.NewScope()
	defer s.Close()
	var src, dst []*cuda.Tensor
	var elems int64
	for _, p := range m.Params().List {
		src = append(src, p.T)
		shape := append([]int64{1}, p.T.Shape()[1:]...)
		dst = append(dst, s.Zeros(cuda.Float32, dev, shape...))
		elems += p.T.Numel() / int64(k)
	}
	samples := make([]int, k)
	for i := range samples {
		samples[i] = 500 - 30*i
	}
	w := cuda.FromSlice(s, dev, fl.Weights(samples))
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()*float64(elems*int64(k+1)*4)/1e9, "GB/s")
	}
	name := fmt.Sprintf("tiny-vit/K%d/%dtensors", k, len(src))
	b.Run(name+"/foreach", func(b *testing.B) {
		timed(b, dev, func(s *cuda.Scope) { s.Fail(fl.AverageInto(s, dst, src, w)) })
		report(b)
	})
	b.Run(name+"/kernel", func(b *testing.B) {
		timed(b, dev, func(s *cuda.Scope) { s.KernelWeightedSum(dst, src, w) })
		report(b)
	})
}
