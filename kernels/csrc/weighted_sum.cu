// weighted_sum.cu: the CUDA version of the weighted_sum kernel (kernels.h states the
// summation order; weighted_sum_ref.cpp is the reference it must equal bit for bit). One
// launch for all tensors: block b finds its tensor by binary search over the table's first
// blocks, then each thread sums the K clients of its elements in stack order with fma.
// Each client's row is read with consecutive threads on consecutive elements (coalesced).
#include <cuda_runtime.h>

#include <cstdio>

#include "kernels.h"

namespace pfl {
namespace kernels {
namespace {

template <typename T>
__device__ T fma_rn(T a, T b, T c);
template <>
__device__ float fma_rn<float>(float a, float b, float c) { return __fmaf_rn(a, b, c); }
template <>
__device__ double fma_rn<double>(double a, double b, double c) { return __fma_rn(a, b, c); }

template <typename T>
__global__ void weighted_sum_kernel(const int64_t *table, int64_t n, const T *w, int64_t k) {
  const int64_t b = blockIdx.x;
  int64_t lo = 0, hi = n - 1;  // the last tensor whose first block is <= b
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (table[4 * mid + 3] <= b) lo = mid; else hi = mid - 1;
  }
  const T *src = reinterpret_cast<const T *>(table[4 * lo]);
  T *dst = reinterpret_cast<T *>(table[4 * lo + 1]);
  const int64_t p = table[4 * lo + 2];
  const int64_t start = (b - table[4 * lo + 3]) * weighted_sum_chunk;
  int64_t end = start + weighted_sum_chunk;
  if (end > p) end = p;
  for (int64_t e = start + threadIdx.x; e < end; e += blockDim.x) {
    T acc = 0;
    for (int64_t j = 0; j < k; ++j) acc = fma_rn<T>(w[j], src[j * p + e], acc);
    dst[e] = acc;
  }
}

}  // namespace

int weighted_sum_cuda(int dtype, const int64_t *table, int64_t n, int64_t blocks, const void *w,
                      int64_t k, void *stream, char *msg, int msg_len) {
  if (n == 0 || blocks == 0) return 0;
  if (blocks > 0x7fffffff) {
    std::snprintf(msg, msg_len, "%lld blocks exceed the grid", static_cast<long long>(blocks));
    return static_cast<int>(cudaErrorInvalidConfiguration);
  }
  const int threads = 256;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (dtype == 0)
    weighted_sum_kernel<float><<<static_cast<unsigned>(blocks), threads, 0, s>>>(table, n, static_cast<const float *>(w), k);
  else
    weighted_sum_kernel<double><<<static_cast<unsigned>(blocks), threads, 0, s>>>(table, n, static_cast<const double *>(w), k);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::snprintf(msg, msg_len, "%s", cudaGetErrorString(err));
    return static_cast<int>(err);
  }
  return 0;
}

}  // namespace kernels
}  // namespace pfl
