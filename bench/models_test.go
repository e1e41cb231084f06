package bench

import (
	"fmt"
	"testing"

	"pfl/bench/harness"
	"pfl/cuda"
	"pfl/engine/model"
)

// workload is one model at one scale.
type workload struct {
	preset  string
	classes int64
	batch   int64 // samples per client per step
	input   func(s *cuda.Scope, g *cuda.Generator, dev cuda.Device, k, b int64) (x, y *cuda.Tensor)
}

func imageInput(side int64) func(s *cuda.Scope, g *cuda.Generator, dev cuda.Device, k, b int64) (*cuda.Tensor, *cuda.Tensor) {
	return func(s *cuda.Scope, g *cuda.Generator, dev cuda.Device, k, b int64) (*cuda.Tensor, *cuda.Tensor) {
		return s.Randn(g, cuda.Float32, dev, k, b, 3, side, side), s.RandInt(g, 0, 10, dev, k, b)
	}
}

func textInput(s *cuda.Scope, g *cuda.Generator, dev cuda.Device, k, b int64) (*cuda.Tensor, *cuda.Tensor) {
	return s.RandInt(g, 0, 100, dev, k, b, 80), s.RandInt(g, 0, 100, dev, k, b, 80)
}

func workloads(dev cuda.Device) []workload {
	batch := int64(8) // keeps CPU runs short
	if dev.IsCUDA() {
		batch = 64
	}
	w := []workload{
		{"tiny-vit", 10, batch, imageInput(32)},
		{"focalnet-cifar", 10, batch, imageInput(32)},
		{"convnet", 10, batch, imageInput(32)},
		{"text-transformer", 100, batch, textInput},
		{"lstm", 100, batch, textInput},
	}
	if dev.IsCUDA() {
		w = append(w, workload{"vit-s16", 10, 32, imageInput(224)}, workload{"focalnet-t-srf", 10, 32, imageInput(224)})
	}
	return w
}

// BenchmarkModels times the forward pass and the training step (forward, per-client
// cross-entropy, autograd, SGD over all parameters) of each model at K = 1 and K = 8.
func BenchmarkModels(b *testing.B) {
	dev := device(b)
	for _, w := range workloads(dev) {
		for _, k := range []int64{1, 8} {
			for _, train := range []bool{false, true} {
				mode := "forward"
				if train {
					mode = "train"
				}
				b.Run(fmt.Sprintf("%s/K%d/%s", w.preset, k, mode), func(b *testing.B) {
					benchModel(b, dev, w, k, train)
				})
			}
		}
	}
}

func benchModel(b *testing.B, dev cuda.Device, w workload, k int64, train bool) {
	g, _ := cuda.NewGenerator(1, dev)
	defer g.Close()
	p, err := model.Lookup(w.preset)
	if err != nil {
		b.Fatal(err)
	}
	m, err := p.Build(w.classes, int(k), dev, cuda.Float32, g) // text models ignore classes
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s := cuda.NewScope()
	defer s.Close()
	x, y := w.input(s, g, dev, k, w.batch)
	params := model.Tensors(m.Params().Trainable())
	step := cuda.NewScope()
	defer step.Close()
	step.SetGradEnabled(train)
	run := func() {
		step.Reset()
		step.SetGradEnabled(train)
		out := m.Forward(step, x, &model.Pass{Train: train, Gen: g})
		if train {
			classes := out.Size(-1)
			per := step.CrossEntropy(step.Reshape(out, -1, classes), step.Reshape(y, -1), nil, cuda.ReduceNone, 0)
			loss := step.Sum(step.Mean(step.Reshape(per, k, -1), false, 1), false)
			grads := step.Grad([]*cuda.Tensor{loss}, nil, params, cuda.GradOptions{})
			step.ForeachAdd(params, grads, -1e-3)
		}
		if err := step.Err(); err != nil {
			b.Fatal(err)
		}
		if err := cuda.Synchronize(dev); err != nil {
			b.Fatal(err)
		}
	}
	run() // warm-up
	for b.Loop() {
		run()
	}
	samples := float64(k*w.batch) * float64(b.N)
	flops := model.ForwardFLOPs(m)
	if train {
		flops = model.TrainFLOPs(m)
	}
	secs := b.Elapsed().Seconds()
	tflops := flops * samples / secs / 1e12
	b.ReportMetric(samples/secs, "samples/s")
	b.ReportMetric(tflops, "TFLOP/s")
	peak, err := harness.PeakTFLOPS(dev, cuda.Float32) // the models run in float32 for now
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(100*tflops/peak, "MFU%")
}
