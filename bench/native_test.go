package bench

import (
	"fmt"
	"os"
	"testing"

	"pfl/cuda"
)

// device is where the benchmarks run: cuda:0 when the library sees one, else the CPU.
// PFL_BENCH_DEVICE=cpu forces the CPU.
func device(b *testing.B) cuda.Device {
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

// BenchmarkNativeCall is the cost of one cgo call through the vtable (a counter read).
func BenchmarkNativeCall(b *testing.B) {
	if err := cuda.Load(); err != nil {
		b.Fatal(err)
	}
	var n int64
	for b.Loop() {
		n += cuda.LiveTensors()
	}
	_ = n
}

// BenchmarkSmallOp is one eager 4x4 add including its handle's free: what a tiny op costs
// end to end (libtorch dispatch and allocation dominate, not cgo).
func BenchmarkSmallOp(b *testing.B) {
	dev := device(b)
	s := cuda.NewScope()
	defer s.Close()
	x := s.Ones(cuda.Float32, dev, 4, 4)
	s.Keep(x)
	defer x.Close()
	for b.Loop() {
		s.Reset()
		s.Add(x, x)
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	if err := cuda.Synchronize(dev); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMatmul reports the achieved TFLOP/s of an n×n×n matrix product (2n³ FLOPs).
// On a GPU the same run's bf16 rate is the peak that MFU is reported against.
func BenchmarkMatmul(b *testing.B) {
	dev := device(b)
	sizes := []int64{256, 1024, 2048}
	dtypes := []cuda.DType{cuda.Float32}
	if dev.IsCUDA() {
		sizes = append(sizes, 8192)
		dtypes = append(dtypes, cuda.BFloat16)
	}
	for _, dt := range dtypes {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%d", dt, n), func(b *testing.B) {
				s := cuda.NewScope()
				defer s.Close()
				g, err := cuda.NewGenerator(1, dev)
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				// random operands: zeros run faster on some GPUs and would flatter the rate
				x := s.To(s.Randn(g, cuda.Float32, dev, n, n), dt)
				y := s.To(s.Randn(g, cuda.Float32, dev, n, n), dt)
				step := cuda.NewScope()
				defer step.Close()
				step.SetGradEnabled(false)
				step.MatMul(x, y) // warm-up (cuBLAS handles, workspaces)
				if err := cuda.Synchronize(dev); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					step.Reset()
					step.MatMul(x, y)
					if err := cuda.Synchronize(dev); err != nil {
						b.Fatal(err)
					}
				}
				if err := step.Err(); err != nil {
					b.Fatal(err)
				}
				flops := 2 * float64(n) * float64(n) * float64(n) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e12, "TFLOP/s")
			})
		}
	}
}
