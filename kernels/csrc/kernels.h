// kernels.h: pfl's custom kernels. Each has a CPU reference (plain C++, compiled into every
// build of the native library) and a CUDA version (compiled only when the library is built
// against a CUDA libtorch with PFL_CUDA_KERNELS on). This header uses no torch and no CUDA
// type, so the .cu files compile with nvcc alone and the glue that checks tensors and picks
// the version (cuda/csrc/kernels.cpp) is ordinary libtorch C++.
//
// The CPU reference and the CUDA version of a kernel compute the same IEEE operations in
// the same order, so they agree bit for bit: the .cu files are compiled with -fmad=false
// and IEEE division, and every fused multiply-add is an explicit fma.
#pragma once

#include <cstdint>

namespace pfl {
namespace kernels {

// ImageBatch describes one client-stacked image batch (kernel "image_batch"): R = K·B rows,
// each one sample of the uint8 image set, gathered, scaled to [0, 1], placed in an H×W
// window of the image zero-padded by pad (a random crop), mirrored left-right where flip
// is set, and normalized per channel. For row r, channel c, pixel (y, x):
//
//   sy = y + dy[r] − pad,   sx = (flip[r] ? W − 1 − x : x) + dx[r] − pad
//   v  = (0 ≤ sy < H and 0 ≤ sx < W) ? float(images[index[r], c0, sy, sx]) / 255 : 0
//   out[r, c, y, x] = (v − mean[c]) / std[c]        (float32, two roundings as written)
//
// with c0 = c when the set has C channels and c0 = 0 when it has one (a grey set served
// as C channels). This is exactly what engine/data's DeviceImages.Batch computes without
// resize and noise: zero padding on the [0, 1] scale, then normalization, so a padded
// pixel becomes −mean/std. Offsets outside [0, 2·pad] read further padding.
struct ImageBatch {
  const uint8_t *images;  // [N, C0, H, W], contiguous
  int64_t n, c0, h, w;
  const int64_t *index;  // [R]
  const int64_t *dy;     // [R] or null (all 0)
  const int64_t *dx;     // [R] or null (all 0)
  const bool *flip;      // [R] or null (none)
  int64_t rows;          // R
  int64_t c;             // output channels; c0 is c or 1
  const float *mean;     // [c]
  const float *std;      // [c]
  int64_t pad;
  float *out;  // [R, c, H, W], contiguous
};

// image_batch_ref is the CPU reference. It returns −1 on success, else the first row whose
// index is outside [0, n) (nothing is written for that row and the rest).
int64_t image_batch_ref(const ImageBatch &a);

// WeightedSum describes the weighted aggregation over clients of n tensors in one pass
// (kernel "weighted_sum"): for every tensor i and element p,
//
//   acc = 0;  for k = 0, 1, ..., K−1:  acc = fma(w[k], src_i[k·P_i + p], acc);  dst_i[p] = acc
//
// in the tensors' type T (float or double): a sequential sum over the clients in stack
// order, one rounding per client (the fma rounds w·x + acc once). The order does not depend
// on the device, the thread count or the tensor sizes.
template <typename T>
struct WeightedSum {
  const T *const *src;  // n pointers to [K, P_i], contiguous
  T *const *dst;        // n pointers to [P_i], contiguous
  const int64_t *numel; // n values P_i
  int64_t n;
  const T *w;  // [K]
  int64_t k;
};

// weighted_sum_ref is the CPU reference.
template <typename T>
void weighted_sum_ref(const WeightedSum<T> &a);

// CUDA versions (defined in the .cu files, present only with PFL_WITH_CUDA_KERNELS). Each
// launches on stream (a cudaStream_t) and returns 0, or a cudaError_t code with its text in
// msg. Pointers are device pointers.

// image_batch_cuda launches one thread per output element. An index outside [0, n) makes
// its row NaN (a device-side check cannot raise without poisoning the context or a sync).
int image_batch_cuda(const ImageBatch &a, void *stream, char *msg, int msg_len);

// weighted_sum_cuda aggregates all n tensors in one launch. table is a device array of
// 4·n int64: for tensor i, its src pointer, dst pointer, P_i and the index of its first
// block, blocks of weighted_sum_chunk elements; blocks is the total. dtype: 0 float, 1 double.
constexpr int64_t weighted_sum_chunk = 2048;
int weighted_sum_cuda(int dtype, const int64_t *table, int64_t n, int64_t blocks, const void *w,
                      int64_t k, void *stream, char *msg, int msg_len);

}  // namespace kernels
}  // namespace pfl
