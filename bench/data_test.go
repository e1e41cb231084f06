package bench

import (
	"fmt"
	"testing"

	"pfl/cuda"
	"pfl/engine/data"
)

// BenchmarkBatch assembles client-stacked CIFAR-shaped batches on the device: gather the
// uint8 images, scale, pad-crop-flip, normalize (K clients × 64 samples per step).
func BenchmarkBatch(b *testing.B) {
	dev := device(b)
	x := data.Synthetic("synthetic", 10000, 3, 32, 32, 10, 1)
	mean, std := data.ChannelStats(x)
	d, err := data.Upload(x, dev, mean, std)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for _, k := range []int{1, 8} {
		b.Run(fmt.Sprintf("K%d/B64", k), func(b *testing.B) {
			ids := make([]int, k)
			parts := make([][]int, k)
			for i := range parts {
				ids[i] = i
				for j := 0; j < 1000; j++ {
					parts[i] = append(parts[i], (i*1000+j)%x.N)
				}
			}
			aug := data.Augment{Pad: 4, Flip: true}
			plan, err := data.NewPlan(ids, parts, data.PlanConfig{Epochs: 1, Batch: 64, Shuffle: true, Augment: aug, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			dp, err := plan.Upload(dev, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer dp.Close()
			s := cuda.NewScope()
			defer s.Close()
			step := 0
			for b.Loop() {
				s.Reset()
				d.Batch(s, dp, step%plan.Steps)
				step++
				if err := cuda.Synchronize(dev); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(k*64*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
