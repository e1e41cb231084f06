// image_batch.cu: the CUDA version of the image_batch kernel (kernels.h states the
// computation; image_batch_ref.cpp is the reference it must equal bit for bit). One thread
// per output element [R, C, H, W]; consecutive threads write consecutive x, so the stores
// coalesce and the uint8 reads of a row stay within one cached line.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "kernels.h"

namespace pfl {
namespace kernels {
namespace {

__global__ void image_batch_kernel(ImageBatch a, int64_t total) {
  const int64_t plane = a.h * a.w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = i % a.w;
    const int64_t y = (i / a.w) % a.h;
    const int64_t c = (i / plane) % a.c;
    const int64_t r = i / (plane * a.c);
    const int64_t idx = a.index[r];
    if (idx < 0 || idx >= a.n) {
      a.out[i] = NAN;
      continue;
    }
    const int64_t dy = a.dy ? a.dy[r] : 0, dx = a.dx ? a.dx[r] : 0;
    const bool flip = a.flip ? a.flip[r] : false;
    const int64_t sy = y + dy - a.pad;
    const int64_t sx = (flip ? a.w - 1 - x : x) + dx - a.pad;
    float v = 0.0f;
    if (sy >= 0 && sy < a.h && sx >= 0 && sx < a.w)
      v = __fdiv_rn(static_cast<float>(a.images[((idx * a.c0 + (a.c0 == 1 ? 0 : c)) * a.h + sy) * a.w + sx]), 255.0f);
    a.out[i] = __fdiv_rn(__fsub_rn(v, a.mean[c]), a.std[c]);
  }
}

}  // namespace

int image_batch_cuda(const ImageBatch &a, void *stream, char *msg, int msg_len) {
  const int64_t total = a.rows * a.c * a.h * a.w;
  if (total == 0) return 0;
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 1 << 20) blocks = 1 << 20;  // the grid-stride loop covers the rest
  image_batch_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(a, total);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::snprintf(msg, msg_len, "%s", cudaGetErrorString(err));
    return static_cast<int>(err);
  }
  return 0;
}

}  // namespace kernels
}  // namespace pfl
