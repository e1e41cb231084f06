package bench

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"pfl/cuda"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// plainModels are the ViTs of the CPU comparisons with FedTP's official code: the small
// one of configs/fedtp-sbs-fmnist.yaml and FedTP's default of configs/fedtp-default-fmnist.yaml,
// on 3×32×32 inputs with 10 classes.
var plainModels = []struct {
	name string
	spec model.Spec
}{
	{"sbs-small", model.Spec{Preset: "tiny-vit", Classes: 10, Image: 32, Channels: 3, Depth: 3, Patch: 8, Dim: 64, Heads: 4, HeadDim: 16, MLP: 128}},
	{"fedtp-default", model.Spec{Preset: "tiny-vit", Classes: 10, Image: 32, Channels: 3, Depth: 6, Patch: 4, Dim: 128, Heads: 8, HeadDim: 64, MLP: 256}},
}

// BenchmarkPlainLoop is the ceiling of the federated workloads on the same model: one
// plain training loop through the same native calls as a client's local training (the
// model's forward pass with dropout, per-client cross-entropy, one autograd call, the
// local SGD with momentum 0.9 and weight decay 1e-5), with no federated logic: no
// sampling, no data plan, no loading of client rows, no aggregation. K = 1 is one model,
// as a plain PyTorch loop; K = 5 stacks five copies, as a round of 5 clients trains them.
// Batch 64 per model, 8 batches of random images resident on the device, cycled.
// samples/s counts K × 64 per step, samples/cpu-s the same per CPU-second. On the CPU pin the thread count from the outside
// (OMP_NUM_THREADS, taskset) to compare with a `pfl train` run under the same setting.
func BenchmarkPlainLoop(b *testing.B) {
	dev := device(b)
	for _, pm := range plainModels {
		for _, k := range []int{1, 5} {
			b.Run(fmt.Sprintf("%s/K%d", pm.name, k), func(b *testing.B) { plainLoop(b, dev, pm.spec, k) })
		}
	}
}

func plainLoop(b *testing.B, dev cuda.Device, spec model.Spec, k int) {
	const batch, batches = 64, 8
	g, err := cuda.NewGenerator(1, dev)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	build, err := spec.Builder()
	if err != nil {
		b.Fatal(err)
	}
	m, err := build(k, dev, cuda.Float32, g)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	data := cuda.NewScope()
	defer data.Close()
	var xs, ys []*cuda.Tensor
	for range batches {
		xs = append(xs, data.Randn(g, cuda.Float32, dev, int64(k), batch, spec.Channels, spec.Image, spec.Image))
		ys = append(ys, data.RandInt(g, 0, spec.Classes, dev, int64(k), batch))
	}
	active := data.Ones(cuda.Float32, dev, int64(k))
	if err := data.Err(); err != nil {
		b.Fatal(err)
	}
	params := model.Tensors(m.Params().Trainable())
	opt := fl.NewSGD(fl.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 1e-5}) // its momentum buffers are its own
	defer opt.Close()
	step := cuda.NewScope()
	defer step.Close()
	i := 0
	run := func() {
		step.Reset()
		x, y := xs[i%batches], ys[i%batches]
		i++
		out := m.Forward(step, x, &model.Pass{Train: true, Gen: g})
		classes := out.Size(-1)
		per := step.CrossEntropy(step.Reshape(out, -1, classes), step.Reshape(y, -1), nil, cuda.ReduceNone, 0)
		loss := step.Sum(step.Mean(step.Reshape(per, int64(k), -1), false, 1), false)
		grads := step.Grad([]*cuda.Tensor{loss}, nil, params, cuda.GradOptions{})
		opt.Step(step, params, grads, active)
		if err := step.Err(); err != nil {
			b.Fatal(err)
		}
		if err := cuda.Synchronize(dev); err != nil {
			b.Fatal(err)
		}
	}
	run() // warm-up: first-call costs, the momentum buffers, the allocator's cache
	start, cpu0 := time.Now(), cpuSeconds(b)
	steps := 0
	for b.Loop() {
		run()
		steps++
	}
	samples := float64(steps * k * batch)
	b.ReportMetric(samples/time.Since(start).Seconds(), "samples/s")
	// per CPU-second of the process (user + sys, all threads): on a machine shared with
	// other jobs this, unlike the wall-clock rate, measures the loop and not the load
	b.ReportMetric(samples/(cpuSeconds(b)-cpu0), "samples/cpu-s")
}

// cpuSeconds is the process's user + system CPU time so far.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
