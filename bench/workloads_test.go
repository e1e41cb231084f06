package bench

import (
	"testing"

	"pfl/bench/harness"
)

// BenchmarkWorkloads runs each harness workload as `pfl bench` does: at full size on
// CUDA, shrunk (harness.Workload.Small) on the CPU. One iteration is a whole harness run
// (data, model, warm-up, timed rounds, evaluations); the rates come from the harness's
// timing of the training phase, not from b.Elapsed, which also holds the setup.
func BenchmarkWorkloads(b *testing.B) {
	dev := device(b)
	for _, w := range harness.Workloads() {
		if !dev.IsCUDA() {
			w = w.Small()
		}
		b.Run(w.Name, func(b *testing.B) {
			var last *harness.Report
			var samples, trainS float64
			for b.Loop() {
				r, err := harness.Run(w, dev)
				if err != nil {
					b.Fatal(err)
				}
				samples += float64(r.Samples)
				trainS += r.TrainS * float64(r.MeasuredRounds)
				last = r
			}
			sps := samples / trainS
			tflops := 6 * float64(last.MACs) * sps / 1e12 // the harness's convention: 6·MACs per training sample
			b.ReportMetric(sps, "samples/s")
			b.ReportMetric(tflops, "TFLOP/s")
			b.ReportMetric(100*tflops/last.PeakFP32, "MFU%")
			if last.PeakBF16 > 0 {
				b.ReportMetric(100*tflops/last.PeakBF16, "MFU-bf16%")
			}
			b.ReportMetric(last.ProjectedS, "projected-s")
		})
	}
}
