// internal.h: shared pieces of the native library's C++ side (never included by Go).
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "pfl.h"

#if defined(__has_include)
#if __has_include(<ATen/ops/scaled_dot_product_attention.h>)
#define PFL_HAS_SDPA 1
#endif
#endif
#ifndef PFL_HAS_SDPA
#define PFL_HAS_SDPA 0
#endif

#ifndef PFL_WITH_CUDA
#define PFL_WITH_CUDA 0
#endif

struct pfl_tensor_s {
  at::Tensor t;
};
struct pfl_generator_s {
  at::Generator g;
};

namespace pfl {

extern std::atomic<int64_t> g_live_tensors;
// g_threads is the configured intra-op thread count (0 until the library is loaded).
// OpenMP keeps the count per OS thread, and a Go caller may arrive on any thread, so every
// call installs it (ensure_threads); otherwise reductions and BLAS would run with a
// thread-dependent count, and summation order, from one call to the next.
extern std::atomic<int32_t> g_threads;
void ensure_threads();
// apply_threads makes n the intra-op count of libtorch, of OpenBLAS's pool, and (through
// ensure_threads) of every OS thread that calls in.
void apply_threads(int32_t n);
extern std::atomic<int64_t> g_live_generators;

// ArgError is thrown for bad arguments from the caller; it maps to PFL_ERR_ARG.
struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// NoCudaError maps to PFL_ERR_NO_CUDA.
struct NoCudaError : std::runtime_error {
  NoCudaError() : std::runtime_error("pfl native library was built without CUDA") {}
};

at::ScalarType to_scalar_type(int32_t dtype);
int32_t from_scalar_type(at::ScalarType st);
at::Device to_device(int32_t type, int32_t index);

// wrap hands out a new handle owning a reference to t and fills meta (if not null).
pfl_tensor wrap(const at::Tensor &t, pfl_meta *meta);
void fill_meta(const at::Tensor &t, pfl_meta *meta);
const at::Tensor &unwrap(pfl_tensor h, const char *what);

void set_ok(pfl_status *st);
// fail_current translates the exception being handled into st; call it only in a catch.
int32_t fail_current(pfl_status *st, const char *where);

// CtxGuard installs the grad mode, autocast and stream of a pfl_ctx for one call.
class CtxGuard {
 public:
  explicit CtxGuard(const pfl_ctx *ctx);
  ~CtxGuard();
  CtxGuard(const CtxGuard &) = delete;
  CtxGuard &operator=(const CtxGuard &) = delete;

 private:
  c10::optional<at::AutoGradMode> grad_;
  bool autocast_ = false;
  bool prev_cpu_ = false, prev_gpu_ = false, prev_cache_ = true;
  at::ScalarType prev_cpu_dtype_ = at::kBFloat16, prev_gpu_dtype_ = at::kHalf;
  void *stream_guard_ = nullptr;  // a c10::cuda::CUDAStreamGuard in CUDA builds
};

// run_op implements pfl_api.op (ops.cpp).
std::vector<at::Tensor> run_op(int32_t op, const std::vector<at::Tensor> &in,
                               const int64_t *ints, int32_t n_ints, const double *dbls,
                               int32_t n_dbls, c10::optional<at::Generator> gen);

// The custom kernels' glue (kernels.cpp), behind PFL_OP_KERNEL_*.
std::vector<at::Tensor> kernel_image_batch(const std::vector<at::Tensor> &in, const int64_t *ints,
                                           int32_t n_ints);
void kernel_weighted_sum(const std::vector<at::Tensor> &in);

// The caching allocator of large CPU tensors (host_cache.cpp): release frees its idle
// blocks (and trims glibc's heaps); stats fills out[0..3] (idle bytes, live bytes, hits, misses), false when it is off.
void host_cache_release();
bool host_cache_stats(int64_t *out);
// host_cache_small_stats fills out[0..2] (bytes held in blocks under the cache's threshold,
// bytes free in glibc's heaps, the peak of all bytes held since host_cache_reset_peak),
// false when the cache is off.
bool host_cache_small_stats(int64_t *out);
void host_cache_reset_peak();

// CUDA pieces (cuda.cpp); stubs throw NoCudaError in CPU builds.
void *stream_guard_new(pfl_stream s);
void stream_guard_free(void *g);
void fill_cuda_caps(pfl_caps *c);

}  // namespace pfl

// PFL_TRY / PFL_CATCH wrap the body of every entry point: no exception crosses the boundary.
#define PFL_TRY \
  try {
#define PFL_CATCH(st, where)            \
  }                                     \
  catch (...) {                         \
    return pfl::fail_current(st, where); \
  }                                     \
  pfl::set_ok(st);                      \
  return PFL_OK;
