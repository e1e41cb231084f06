// image_batch_ref.cpp: the CPU reference of the image_batch kernel (kernels.h states the
// computation). Plain loops, one output element at a time, in the order kernels.h writes.
#include "kernels.h"

namespace pfl {
namespace kernels {

int64_t image_batch_ref(const ImageBatch &a) {
  const int64_t plane = a.h * a.w;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t idx = a.index[r];
    if (idx < 0 || idx >= a.n) return r;
    const int64_t dy = a.dy ? a.dy[r] : 0, dx = a.dx ? a.dx[r] : 0;
    const bool flip = a.flip ? a.flip[r] : false;
    for (int64_t c = 0; c < a.c; ++c) {
      const uint8_t *src = a.images + (idx * a.c0 + (a.c0 == 1 ? 0 : c)) * plane;
      const float mean = a.mean[c], std = a.std[c];
      float *dst = a.out + (r * a.c + c) * plane;
      for (int64_t y = 0; y < a.h; ++y) {
        const int64_t sy = y + dy - a.pad;
        for (int64_t x = 0; x < a.w; ++x) {
          const int64_t sx = (flip ? a.w - 1 - x : x) + dx - a.pad;
          float v = 0.0f;
          if (sy >= 0 && sy < a.h && sx >= 0 && sx < a.w) v = static_cast<float>(src[sy * a.w + sx]) / 255.0f;
          dst[y * a.w + x] = (v - mean) / std;
        }
      }
    }
  }
  return -1;
}

}  // namespace kernels
}  // namespace pfl
