// Package harness runs pfl's benchmark workloads: whole federated runs of the papers'
// shapes (FedTP's tiny ViT on CIFAR-100, FedPerfix's ViT-S/16 at 224, a FocalNet) built
// through the public API of engine/fl, timed round by round, and reported as samples/s,
// TFLOP/s, MFU against a matmul peak measured in the same process, the time split of a
// round, peak device memory and the projected wall time of the full run.
//
// `pfl bench` and the benchmarks in package bench both call Run, so the command-line
// table and `go test -bench` measure the same thing.
//
// # FLOP convention
//
// FLOPs come from the model's own count of forward multiply-accumulates (model.Model's
// MACs: matrix products and convolutions; norms, softmax and elementwise ops are not
// counted), at 2 FLOPs per MAC. A training sample costs 3 forward passes (forward, and a
// backward pass of twice the forward), 6·MACs FLOPs; an evaluation sample 2·MACs. Only
// real samples count: padding of a client's last batch and idle stack rows are work the
// device does but not work the run needs. The server's side (aggregation, FedTP's
// hypernetwork forward and its vector-Jacobian product) is not counted: for the FedTP
// workloads it is under 10⁻³ of a round's training FLOPs, and its time shows up in the
// aggregate column instead.
//
// MFU is achieved training FLOP/s over the peak of a large square matmul measured in the
// same process (PeakTFLOPS): float32 on every device, and on CUDA also bfloat16, the rate
// a GPU's MFU is usually quoted against. Whether libtorch runs float32 matmuls as TF32
// is its own setting (off for matmuls by default since 1.12); the float32 peak is measured
// under the same setting as the run.
package harness
