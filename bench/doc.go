// Package bench holds pfl's benchmarks: testing.B benchmarks that report samples/s,
// TFLOP/s and MFU with b.ReportMetric, and the script (gpu.sh) that builds the CUDA native
// library on a GPU machine and runs the GPU tests and benchmarks there. Measured numbers
// go to RESULTS.md with date, device and command. BenchmarkKernels times the pieces of a
// round alone (stacked attention, stacked linear, aggregation, FedTP's hypernetwork VJP)
// at the workloads' shapes. The federated workloads (whole runs of the papers' shapes)
// live in bench/harness, which `pfl bench` and BenchmarkWorkloads share.
package bench
