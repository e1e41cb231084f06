// Package kernels holds the tests and benchmarks of pfl's custom kernels; the kernels
// themselves are C++ and CUDA in csrc/, built into the native library by the top-level
// CMakeLists.txt and called through the cuda package (Scope.KernelImageBatch,
// Scope.KernelWeightedSum).
//
// Each kernel has a C++ CPU reference, compiled into every build, and a CUDA version
// (the .cu files), compiled when libtorch has CUDA. csrc/kernels.h states each kernel's
// arithmetic; the reference and the CUDA version compute the same IEEE operations in the
// same order, so they agree bit for bit. The tests hold each kernel against the libtorch-op
// path it could replace (engine/data's batch assembly, engine/fl's AverageInto) on every
// device the library has, and against a host model of its stated arithmetic. The kernels
// are not used by the training path yet: they have not been measured on a GPU.
//
//	image_batch   gather uint8 images, scale, crop with zero padding, flip, normalize:
//	              [K, B, C, H, W] float32 in one pass
//	weighted_sum  the weighted mean over clients of every shared parameter, one launch,
//	              a fixed fma summation order over the clients
package kernels
