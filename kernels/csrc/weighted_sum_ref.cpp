// weighted_sum_ref.cpp: the CPU reference of the weighted_sum kernel (kernels.h states the
// summation order). std::fma rounds once, as the CUDA version's fma does.
#include <cmath>

#include "kernels.h"

namespace pfl {
namespace kernels {

template <typename T>
void weighted_sum_ref(const WeightedSum<T> &a) {
  for (int64_t i = 0; i < a.n; ++i) {
    const T *src = a.src[i];
    T *dst = a.dst[i];
    const int64_t p = a.numel[i];
    // The clients are visited in order for every element; blocks of elements keep the
    // reads of each client's row sequential.
    constexpr int64_t block = 512;
    T acc[block];
    for (int64_t e0 = 0; e0 < p; e0 += block) {
      const int64_t m = p - e0 < block ? p - e0 : block;
      for (int64_t e = 0; e < m; ++e) acc[e] = 0;
      for (int64_t k = 0; k < a.k; ++k) {
        const T wk = a.w[k], *row = src + k * p + e0;
        for (int64_t e = 0; e < m; ++e) acc[e] = std::fma(wk, row[e], acc[e]);
      }
      for (int64_t e = 0; e < m; ++e) dst[e0 + e] = acc[e];
    }
  }
}

template void weighted_sum_ref<float>(const WeightedSum<float> &);
template void weighted_sum_ref<double>(const WeightedSum<double> &);

}  // namespace kernels
}  // namespace pfl
