package cuda

// pfl's own kernels (the top-level kernels/ folder): each has a C++ reference that runs on
// CPU tensors and a CUDA version that runs on CUDA tensors and computes the same IEEE
// operations in the same order. kernels/csrc/kernels.h states each one's arithmetic. They run
// without autograd. A library built without the CUDA versions (a CPU libtorch, or CMake's
// PFL_CUDA_KERNELS=OFF) answers ErrNotImplemented for CUDA tensors.

// ImageBatchArgs are the inputs of KernelImageBatch besides the image set.
type ImageBatchArgs struct {
	Index *Tensor // int64 [K, B]: the image of each stack row and slot
	// DY, DX (int64 [K, B]) place each sample's H×W window in the image zero-padded by Pad
	// on every side (offsets in [0, 2·Pad]); nil: 0.
	DY, DX *Tensor
	Flip   *Tensor // bool [K, B]: mirror the window left-right; nil: no flip
	// Mean and Std (float32, C values or one for all) normalize each output channel on the
	// [0, 1] scale.
	Mean, Std *Tensor
	Pad       int64
	Channels  int64 // C: the stored channels, or 3 for a grey set served as RGB
}

// KernelImageBatch builds a client-stacked batch [K, B, C, H, W] float32 from the uint8
// image set images [N, C0, H, W] in one pass: gather, scale to [0, 1], crop at (DY, DX)
// from the image zero-padded by Pad, mirror where Flip is set, normalize. It equals what
// engine/data's DeviceImages.Batch assembles from libtorch ops when no resize and no noise
// are asked for. On the CPU an index outside [0, N) is ErrIndex; on CUDA its row is NaN.
func (s *Scope) KernelImageBatch(images *Tensor, a ImageBatchArgs) *Tensor {
	const op = "kernel_image_batch"
	if !s.args(op, []*Tensor{images, a.Index}, a.DY, a.DX, a.Flip, a.Mean, a.Std) {
		return nil
	}
	if a.Mean == nil || a.Std == nil {
		return s.failf(op, CodeArgument, "mean and std are required")
	}
	switch {
	case images.dtype != Uint8 || images.Dim() != 4:
		return s.failf(op, CodeDType, "images are %s %v, want u8 [N, C, H, W]", images.dtype, images.shape)
	case a.Index.dtype != Int64 || a.Index.Dim() != 2:
		return s.failf(op, CodeShape, "index is %s %v, want i64 [K, B]", a.Index.dtype, a.Index.shape)
	case a.Channels < 1 || (images.shape[1] != a.Channels && images.shape[1] != 1):
		return s.failf(op, CodeShape, "%d channels from %d stored: want equal, or 1 stored", a.Channels, images.shape[1])
	case a.Pad < 0:
		return s.failf(op, CodeArgument, "padding %d", a.Pad)
	}
	for _, t := range []*Tensor{a.DY, a.DX, a.Flip} {
		if t == nil {
			continue
		}
		want := Int64
		if t == a.Flip {
			want = Bool
		}
		if t.dtype != want || !equalShape(t.shape, a.Index.shape) {
			return s.failf(op, CodeShape, "crop offsets and flips must be like the index (%v), got %s %v", a.Index.shape, t.dtype, t.shape)
		}
	}
	for _, t := range []*Tensor{a.Mean, a.Std} {
		if t.dtype != Float32 || (t.Numel() != a.Channels && t.Numel() != 1) {
			return s.failf(op, CodeShape, "mean and std must be f32 with %d values or 1, got %s %v", a.Channels, t.dtype, t.shape)
		}
	}
	for _, t := range []*Tensor{a.Index, a.DY, a.DX, a.Flip, a.Mean, a.Std} {
		if t != nil && t.device != images.device {
			return s.failf(op, CodeArgument, "images on %v, an input on %v", images.device, t.device)
		}
	}
	s.ints(a.Pad, a.Channels)
	return s.run1(op, opKernelImageBatch, nil)
}

// KernelWeightedSum sets dst_i = Σ_k w_k src_i[k] for every i, as ForeachWeightedSum does,
// with one kernel launch for all tensors on CUDA and a fixed summation order on every
// device: acc = fma(w_k, src_i[k], acc) for k = 0 … K−1 from acc = 0, one rounding per
// client. src_i is client-stacked [K, ...], dst_i holds one row's elements, w is [K] (it is
// converted to the tensors' type). Every tensor is float32, or every one float64, on one
// device.
func (s *Scope) KernelWeightedSum(dst, src []*Tensor, w *Tensor) {
	const op = "kernel_weighted_sum"
	if !s.weightedSumArgs(op, dst, src, w) {
		return
	}
	dt, dev := dst[0].dtype, dst[0].device
	if dt != Float32 && dt != Float64 {
		s.failf(op, CodeDType, "tensors are %s, want f32 or f64", dt)
		return
	}
	for i, t := range src {
		switch {
		case t.dtype != dt || dst[i].dtype != dt:
			s.failf(op, CodeDType, "tensor %d is %s/%s, tensor 0 is %s: one type per call", i, dst[i].dtype, t.dtype, dt)
			return
		case t.device != dev || dst[i].device != dev:
			s.failf(op, CodeArgument, "tensor %d on %v, tensor 0 on %v", i, t.device, dev)
			return
		}
	}
	if w.device != dev {
		s.failf(op, CodeArgument, "weights on %v, tensors on %v", w.device, dev)
		return
	}
	s.run0(op, opKernelWeightedSum, nil)
}
