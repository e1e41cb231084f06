// api.cpp: the vtable, error translation, handles, context guards, tensors, autograd and
// generators of pfl's native library. Ops are in ops.cpp, CUDA in cuda.cpp.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <new>

#include "internal.h"

#if PFL_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace pfl {

std::atomic<int64_t> g_live_tensors{0};
std::atomic<int64_t> g_live_generators{0};
std::atomic<int32_t> g_threads{0};

// OpenBLAS's own entry points, looked up at run time: libtorch reaches BLAS through
// libblas.so.3, which Debian's alternatives point at OpenBLAS's OpenMP, pthreads or serial
// build, or at another BLAS that has none of them.
// Go opens this library with RTLD_LOCAL, so its dependencies are not in the global scope:
// the BLAS libtorch loaded is found by its soname (RTLD_NOLOAD: only if already loaded).
namespace {
using blas_set_fn = void (*)(int);
using blas_get_fn = int (*)();
void *blas_symbol(const char *name) {
  for (const char *lib : {"libblas.so.3", "libopenblas.so.0"}) {
    if (void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      void *f = dlsym(h, name);
      dlclose(h);  // drops the reference NOLOAD took; libtorch keeps the library loaded
      if (f) return f;
    }
  }
  return dlsym(RTLD_DEFAULT, name);
}
blas_set_fn blas_set_threads() {
  static blas_set_fn f = reinterpret_cast<blas_set_fn>(blas_symbol("openblas_set_num_threads"));
  return f;
}
blas_get_fn blas_get(const char *name) { return reinterpret_cast<blas_get_fn>(blas_symbol(name)); }
}  // namespace

// at::get_num_threads is this OS thread's OpenMP count (nthreads-var, per thread; libtorch
// installs its configured count on a thread's first call), and at::set_num_threads sets it
// for the calling thread, through the OpenMP runtime libtorch itself uses.
void ensure_threads() {
  int32_t n = g_threads.load(std::memory_order_relaxed);
  if (n > 0 && at::get_num_threads() != n) at::set_num_threads(n);
}

void apply_threads(int32_t n) {
  g_threads.store(n);
  at::set_num_threads(n);
  // OpenBLAS's pthreads build runs its own pool, sized once from OMP_NUM_THREADS or the CPU
  // count and shared by every calling thread: left alone it adds its threads to the workers'
  // (oversubscribed cores, and products that round differently with the pool's size). Its
  // OpenMP build follows each thread's OpenMP count, which ensure_threads sets. An explicit
  // OPENBLAS_NUM_THREADS stays OpenBLAS's.
  if (auto set = blas_set_threads(); set && !std::getenv("OPENBLAS_NUM_THREADS")) set(n);
}

at::ScalarType to_scalar_type(int32_t dtype) {
  switch (dtype) {
    case PFL_F32: return at::kFloat;
    case PFL_F64: return at::kDouble;
    case PFL_BF16: return at::kBFloat16;
    case PFL_I64: return at::kLong;
    case PFL_U8: return at::kByte;
    case PFL_BOOL: return at::kBool;
    case PFL_F16: return at::kHalf;
    case PFL_I32: return at::kInt;
  }
  throw ArgError("unknown dtype code " + std::to_string(dtype));
}

int32_t from_scalar_type(at::ScalarType st) {
  switch (st) {
    case at::kFloat: return PFL_F32;
    case at::kDouble: return PFL_F64;
    case at::kBFloat16: return PFL_BF16;
    case at::kLong: return PFL_I64;
    case at::kByte: return PFL_U8;
    case at::kBool: return PFL_BOOL;
    case at::kHalf: return PFL_F16;
    case at::kInt: return PFL_I32;
    default: return -1;
  }
}

at::Device to_device(int32_t type, int32_t index) {
  switch (type) {
    case PFL_CPU: return at::Device(at::kCPU);
    case PFL_CUDA:
      if (!PFL_WITH_CUDA) throw NoCudaError();
      return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index < 0 ? 0 : index));
  }
  throw ArgError("unknown device type code " + std::to_string(type));
}

void fill_meta(const at::Tensor &t, pfl_meta *m) {
  if (!m) return;
  std::memset(m, 0, sizeof(*m));
  m->dtype = from_scalar_type(t.scalar_type());
  m->device_type = t.is_cuda() ? PFL_CUDA : PFL_CPU;
  m->device_index = t.is_cuda() ? t.device().index() : -1;
  if (t.dim() > PFL_MAX_DIMS) throw ArgError("tensor rank " + std::to_string(t.dim()) +
                                             " exceeds PFL_MAX_DIMS");
  m->ndim = static_cast<int32_t>(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) m->dims[i] = t.size(i);
  m->requires_grad = t.requires_grad() ? 1 : 0;
  m->is_leaf = t.is_leaf() ? 1 : 0;
}

pfl_tensor wrap(const at::Tensor &t, pfl_meta *meta) {
  fill_meta(t, meta);  // may throw before anything is allocated
  auto *h = new pfl_tensor_s{t};
  g_live_tensors.fetch_add(1, std::memory_order_relaxed);
  return h;
}

const at::Tensor &unwrap(pfl_tensor h, const char *what) {
  if (!h) throw ArgError(std::string("null tensor handle for ") + what);
  return h->t;
}

void set_ok(pfl_status *st) {
  if (st) {
    st->code = PFL_OK;
    st->msg[0] = 0;
  }
}

static int32_t set_err(pfl_status *st, int32_t code, const char *where, const std::string &m) {
  if (st) {
    st->code = code;
    std::snprintf(st->msg, PFL_MSG_LEN, "%s: %s", where, m.c_str());
  }
  return code;
}

static std::string torch_msg(const c10::Error &e) {
  static const bool with_bt = std::getenv("PFL_BACKTRACE") != nullptr;
  std::string m = with_bt ? e.what() : e.what_without_backtrace();
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

int32_t fail_current(pfl_status *st, const char *where) {
  try {
    throw;
  } catch (const c10::OutOfMemoryError &e) {
    return set_err(st, PFL_ERR_OOM, where, torch_msg(e));
  } catch (const c10::IndexError &e) {
    return set_err(st, PFL_ERR_INDEX, where, torch_msg(e));
  } catch (const c10::ValueError &e) {
    return set_err(st, PFL_ERR_VALUE, where, torch_msg(e));
  } catch (const c10::TypeError &e) {
    return set_err(st, PFL_ERR_TYPE, where, torch_msg(e));
  } catch (const c10::NotImplementedError &e) {
    return set_err(st, PFL_ERR_NOT_IMPLEMENTED, where, torch_msg(e));
  } catch (const c10::LinAlgError &e) {
    return set_err(st, PFL_ERR_LINALG, where, torch_msg(e));
  } catch (const c10::Error &e) {
    std::string m = torch_msg(e);
    // Asynchronous CUDA failures surface as plain c10::Errors naming CUDA; they may leave
    // the context unusable, so they get their own code.
    int32_t code = m.find("CUDA error") != std::string::npos ? PFL_ERR_CUDA : PFL_ERR_TORCH;
    // The CPU allocator reports exhaustion as a plain c10::Error.
    if (m.find("out of memory") != std::string::npos ||
        m.find("not enough memory") != std::string::npos ||
        m.find("can't allocate memory") != std::string::npos)
      code = PFL_ERR_OOM;
    return set_err(st, code, where, m);
  } catch (const ArgError &e) {
    return set_err(st, PFL_ERR_ARG, where, e.what());
  } catch (const NoCudaError &e) {
    return set_err(st, PFL_ERR_NO_CUDA, where, e.what());
  } catch (const std::bad_alloc &e) {
    return set_err(st, PFL_ERR_OOM, where, "host allocation failed (std::bad_alloc)");
  } catch (const std::exception &e) {
    return set_err(st, PFL_ERR_STD, where, e.what());
  } catch (...) {
    return set_err(st, PFL_ERR_UNKNOWN, where, "unknown C++ exception");
  }
}

// Autocast state moved to per-device-type calls in torch 2.4; the old CUDA-only calls
// remain (deprecated), but we use the new ones where they exist.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define PFL_AUTOCAST_NEW_API 1
#else
#define PFL_AUTOCAST_NEW_API 0
#endif

static bool autocast_gpu_enabled() {
#if PFL_AUTOCAST_NEW_API
  return at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return at::autocast::is_enabled();
#endif
}
static bool autocast_cpu_enabled() {
#if PFL_AUTOCAST_NEW_API
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}
static void set_autocast(bool cpu, at::ScalarType cpu_dt, bool gpu, at::ScalarType gpu_dt) {
#if PFL_AUTOCAST_NEW_API
  at::autocast::set_autocast_enabled(at::kCPU, cpu);
  at::autocast::set_autocast_dtype(at::kCPU, cpu_dt);
  at::autocast::set_autocast_enabled(at::kCUDA, gpu);
  at::autocast::set_autocast_dtype(at::kCUDA, gpu_dt);
#else
  at::autocast::set_cpu_enabled(cpu);
  at::autocast::set_autocast_cpu_dtype(cpu_dt);
  at::autocast::set_enabled(gpu);
  at::autocast::set_autocast_gpu_dtype(gpu_dt);
#endif
}
static at::ScalarType autocast_cpu_dtype() {
#if PFL_AUTOCAST_NEW_API
  return at::autocast::get_autocast_dtype(at::kCPU);
#else
  return at::autocast::get_autocast_cpu_dtype();
#endif
}
static at::ScalarType autocast_gpu_dtype() {
#if PFL_AUTOCAST_NEW_API
  return at::autocast::get_autocast_dtype(at::kCUDA);
#else
  return at::autocast::get_autocast_gpu_dtype();
#endif
}

CtxGuard::CtxGuard(const pfl_ctx *ctx) {
  ensure_threads();
  if (!ctx) return;
  grad_.emplace(ctx->grad_enabled != 0);
  if (ctx->autocast >= 0) {
    at::ScalarType dt = to_scalar_type(ctx->autocast);
    autocast_ = true;
    prev_cpu_ = autocast_cpu_enabled();
    prev_gpu_ = autocast_gpu_enabled();
    prev_cpu_dtype_ = autocast_cpu_dtype();
    prev_gpu_dtype_ = autocast_gpu_dtype();
    prev_cache_ = at::autocast::is_autocast_cache_enabled();
    // The cast cache lives in a thread-local that outlives this call; weights updated in
    // place between calls would then be read stale, so it stays off.
    at::autocast::set_autocast_cache_enabled(false);
    set_autocast(true, dt, PFL_WITH_CUDA != 0, dt);
  }
  if (ctx->stream) stream_guard_ = stream_guard_new(ctx->stream);
}

CtxGuard::~CtxGuard() {
  if (stream_guard_) stream_guard_free(stream_guard_);
  if (autocast_) {
    set_autocast(prev_cpu_, prev_cpu_dtype_, prev_gpu_, prev_gpu_dtype_);
    at::autocast::set_autocast_cache_enabled(prev_cache_);
  }
}

static std::vector<at::Tensor> unwrap_list(const pfl_tensor *hs, int32_t n, const char *what,
                                           bool allow_null) {
  if (n < 0) throw ArgError(std::string("negative count for ") + what);
  if (n > 0 && !hs) throw ArgError(std::string("null array for ") + what);
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    if (!hs[i]) {
      if (!allow_null) throw ArgError(std::string("null tensor handle in ") + what);
      v.emplace_back();
    } else {
      v.push_back(hs[i]->t);
    }
  }
  return v;
}

}  // namespace pfl

using namespace pfl;

extern "C" {

static int32_t api_caps(pfl_caps *c, pfl_status *st) {
  PFL_TRY
  if (!c) throw ArgError("null caps");
  std::memset(c, 0, sizeof(*c));
  std::snprintf(c->torch_version, sizeof(c->torch_version), "%d.%d.%d", TORCH_VERSION_MAJOR,
                TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  c->abi_major = PFL_ABI_MAJOR;
  c->abi_minor = PFL_ABI_MINOR;
  c->has_bf16 = 1;
  c->has_sdpa = PFL_HAS_SDPA;
  c->cxx11_abi = _GLIBCXX_USE_CXX11_ABI;
  ensure_threads();
  c->num_threads = at::get_num_threads();
  fill_cuda_caps(c);
  PFL_CATCH(st, "caps")
}

static int32_t api_set_matmul_precision(const char *p, pfl_status *st) {
  PFL_TRY
  if (!p) throw ArgError("null precision");
  std::string v(p);
  if (v != "highest" && v != "high" && v != "medium")
    throw ArgError("matmul precision \"" + v + "\": want highest, high or medium");
  at::globalContext().setFloat32MatmulPrecision(v);
  PFL_CATCH(st, "set_matmul_precision")
}

static void api_host_cache_release() { host_cache_release(); }
static int32_t api_host_cache_stats(int64_t *out) { return out && host_cache_stats(out) ? 1 : 0; }
static int32_t api_host_cache_small_stats(int64_t *out) { return out && host_cache_small_stats(out) ? 1 : 0; }
static void api_host_cache_reset_peak() { host_cache_reset_peak(); }

static int64_t api_live_tensors() { return g_live_tensors.load(); }
static int64_t api_live_generators() { return g_live_generators.load(); }

static int32_t api_set_num_threads(int32_t n, pfl_status *st) {
  PFL_TRY
  if (n < 1) throw ArgError("thread count must be >= 1, got " + std::to_string(n));
  apply_threads(n);
  ensure_threads();
  PFL_CATCH(st, "set_num_threads")
}

// init_threads sets the process's intra-op count when the library loads. An explicit
// OMP_NUM_THREADS or MKL_NUM_THREADS is libtorch's and BLAS's own (they read it) and is
// kept. Otherwise the count is 1, not libtorch's default (its count of physical cores, which
// cpuinfo reads as 1 on some 2-CPU VMs and 2 on others): pfl parallelizes a round over
// client groups (train.workers), and a reduction's rounding depends on its thread count, so a
// machine-chosen count would make the same run give other bits on another machine.
// OPENBLAS_NUM_THREADS, when set, stays OpenBLAS's.
static void init_threads() {
  if (std::getenv("OMP_NUM_THREADS") || std::getenv("MKL_NUM_THREADS")) {
    g_threads.store(static_cast<int32_t>(at::get_num_threads()));
    return;
  }
  apply_threads(1);
}

// omp_max_threads is omp_get_max_threads of the OpenMP runtime libtorch uses (a CUDA
// build's torch may bundle its own libgomp): looked up among libtorch's dependencies.
static int32_t omp_max_threads() {
  using fn = int (*)();
  static fn f = [] {
    Dl_info info{};
    void *self = reinterpret_cast<void *>(&at::get_num_threads);
    if (!dladdr(self, &info) || !info.dli_fname) return fn(nullptr);
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return fn(nullptr);
    fn g = reinterpret_cast<fn>(dlsym(h, "omp_get_max_threads"));
    dlclose(h);
    return g;
  }();
  return f ? f() : -1;
}

static void api_thread_state(int32_t *out) {
  if (!out) return;
  out[0] = omp_max_threads();
  out[1] = at::get_num_threads();
  auto count = blas_get("openblas_get_num_threads");
  auto kind = blas_get("openblas_get_parallel");
  out[2] = count ? count() : -1;
  out[3] = kind ? kind() : -1;
}

static int32_t api_tensor_from_data(const void *data, int32_t dtype, const int64_t *dims,
                                    int32_t ndim, int32_t device_type, int32_t device_index,
                                    pfl_tensor *out, pfl_meta *meta, pfl_status *st) {
  PFL_TRY
  if (!out) throw ArgError("null output");
  *out = nullptr;
  if (ndim < 0 || ndim > PFL_MAX_DIMS) throw ArgError("rank out of range");
  std::vector<int64_t> shape(dims, dims + ndim);
  int64_t numel = 1;
  for (auto d : shape) {
    if (d < 0) throw ArgError("negative dimension");
    numel *= d;
  }
  if (numel > 0 && !data) throw ArgError("null data for a non-empty tensor");
  ensure_threads();
  auto opts = at::TensorOptions().dtype(to_scalar_type(dtype));
  at::Tensor t = at::empty(shape, opts);
  if (numel > 0) std::memcpy(t.data_ptr(), data, numel * t.element_size());
  at::Device dev = to_device(device_type, device_index);
  if (!dev.is_cpu()) t = t.to(dev);
  *out = wrap(t, meta);
  PFL_CATCH(st, "tensor_from_data")
}

static int32_t api_tensor_to_host(pfl_tensor h, int32_t dtype, void *dst, int64_t nbytes,
                                  pfl_status *st) {
  PFL_TRY
  ensure_threads();
  const at::Tensor &t = unwrap(h, "tensor_to_host");
  at::Tensor c = t.detach().to(at::kCPU, to_scalar_type(dtype)).contiguous();
  int64_t want = c.numel() * static_cast<int64_t>(c.element_size());
  if (want != nbytes)
    throw ArgError("destination holds " + std::to_string(nbytes) + " bytes, tensor needs " +
                   std::to_string(want));
  if (want > 0) {
    if (!dst) throw ArgError("null destination");
    std::memcpy(dst, c.data_ptr(), want);
  }
  PFL_CATCH(st, "tensor_to_host")
}

static int32_t api_tensor_meta(pfl_tensor h, pfl_meta *meta, pfl_status *st) {
  PFL_TRY
  fill_meta(unwrap(h, "tensor_meta"), meta);
  PFL_CATCH(st, "tensor_meta")
}

static void api_tensor_free(pfl_tensor h) {
  if (!h) return;
  delete h;  // at::Tensor's destructor does not throw
  g_live_tensors.fetch_sub(1, std::memory_order_relaxed);
}

static void api_tensor_free_many(const pfl_tensor *hs, int64_t n) {
  if (!hs) return;
  for (int64_t i = 0; i < n; ++i) api_tensor_free(hs[i]);
}

static int32_t api_op(const pfl_ctx *ctx, int32_t op, const pfl_tensor *in, int32_t n_in,
                      const int64_t *ints, int32_t n_ints, const double *dbls, int32_t n_dbls,
                      pfl_generator gen, pfl_tensor *out, pfl_meta *meta, int32_t n_out,
                      pfl_status *st) {
  std::vector<pfl_tensor> made;
  try {
    CtxGuard guard(ctx);
    if (n_ints < 0 || (n_ints > 0 && !ints)) throw ArgError("bad int arguments");
    if (n_dbls < 0 || (n_dbls > 0 && !dbls)) throw ArgError("bad real arguments");
    auto inputs = unwrap_list(in, n_in, "op inputs", true);
    c10::optional<at::Generator> g;
    if (gen) g = gen->g;
    std::vector<at::Tensor> res = run_op(op, inputs, ints, n_ints, dbls, n_dbls, g);
    if (static_cast<int32_t>(res.size()) != n_out)
      throw ArgError("op " + std::to_string(op) + " produces " + std::to_string(res.size()) +
                     " outputs, caller expects " + std::to_string(n_out));
    for (int32_t i = 0; i < n_out; ++i) made.push_back(wrap(res[i], meta ? &meta[i] : nullptr));
  } catch (...) {
    for (auto h : made) api_tensor_free(h);
    return fail_current(st, "op");
  }
  for (int32_t i = 0; i < n_out; ++i) out[i] = made[i];
  set_ok(st);
  return PFL_OK;
}

static int32_t api_set_requires_grad(pfl_tensor h, int32_t flag, pfl_status *st) {
  PFL_TRY
  if (!h) throw ArgError("null tensor");
  h->t.requires_grad_(flag != 0);
  PFL_CATCH(st, "set_requires_grad")
}

static int32_t api_grad_of(pfl_tensor h, pfl_tensor *out, pfl_meta *meta, pfl_status *st) {
  PFL_TRY
  if (!out) throw ArgError("null output");
  *out = nullptr;
  const at::Tensor &g = unwrap(h, "grad_of").grad();
  if (g.defined()) *out = wrap(g, meta);
  PFL_CATCH(st, "grad_of")
}

static int32_t api_zero_grad(const pfl_tensor *hs, int64_t n, int32_t set_to_none,
                             pfl_status *st) {
  PFL_TRY
  ensure_threads();
  at::NoGradGuard ng;
  for (int64_t i = 0; i < n; ++i) {
    at::Tensor &t = const_cast<at::Tensor &>(unwrap(hs[i], "zero_grad"));
    if (!t.grad().defined()) continue;
    if (set_to_none) {
      t.mutable_grad().reset();
    } else {
      t.mutable_grad().detach_();
      t.mutable_grad().zero_();
    }
  }
  PFL_CATCH(st, "zero_grad")
}

static int32_t api_backward(const pfl_ctx *ctx, const pfl_tensor *outs,
                            const pfl_tensor *grad_outs, int32_t n_outs, int32_t retain_graph,
                            pfl_status *st) {
  PFL_TRY
  CtxGuard guard(ctx);
  auto o = unwrap_list(outs, n_outs, "backward outputs", false);
  std::vector<at::Tensor> g(n_outs);
  if (grad_outs) g = unwrap_list(grad_outs, n_outs, "backward grad_outputs", true);
  torch::autograd::backward(o, g, c10::optional<bool>(retain_graph != 0), false);
  PFL_CATCH(st, "backward")
}

static int32_t api_grad(const pfl_ctx *ctx, const pfl_tensor *outs, const pfl_tensor *grad_outs,
                        int32_t n_outs, const pfl_tensor *inputs, int32_t n_inputs,
                        int32_t retain_graph, int32_t create_graph, int32_t allow_unused,
                        pfl_tensor *out, pfl_meta *meta, pfl_status *st) {
  std::vector<pfl_tensor> made;
  try {
    CtxGuard guard(ctx);
    auto o = unwrap_list(outs, n_outs, "grad outputs", false);
    auto x = unwrap_list(inputs, n_inputs, "grad inputs", false);
    std::vector<at::Tensor> g(n_outs);
    if (grad_outs) g = unwrap_list(grad_outs, n_outs, "grad grad_outputs", true);
    auto res = torch::autograd::grad(o, x, g, c10::optional<bool>(retain_graph != 0),
                                     create_graph != 0, allow_unused != 0);
    for (int32_t i = 0; i < n_inputs; ++i)
      made.push_back(res[i].defined() ? wrap(res[i], meta ? &meta[i] : nullptr) : nullptr);
  } catch (...) {
    for (auto h : made) api_tensor_free(h);
    return fail_current(st, "grad");
  }
  for (int32_t i = 0; i < n_inputs; ++i) out[i] = made[i];
  set_ok(st);
  return PFL_OK;
}

static int32_t api_generator_new(uint64_t seed, int32_t device_type, int32_t device_index,
                                 pfl_generator *out, pfl_status *st) {
  PFL_TRY
  if (!out) throw ArgError("null output");
  *out = nullptr;
  at::Device dev = to_device(device_type, device_index);
  at::Generator g;
  if (dev.is_cpu()) {
    g = at::make_generator<at::CPUGeneratorImpl>(seed);
  } else {
#if PFL_WITH_CUDA
    g = at::make_generator<at::CUDAGeneratorImpl>(dev.index());
    g.set_current_seed(seed);
#endif
  }
  *out = new pfl_generator_s{g};
  g_live_generators.fetch_add(1, std::memory_order_relaxed);
  PFL_CATCH(st, "generator_new")
}

static int32_t api_generator_set_seed(pfl_generator g, uint64_t seed, pfl_status *st) {
  PFL_TRY
  if (!g) throw ArgError("null generator");
  std::lock_guard<std::mutex> lock(g->g.mutex());
  g->g.set_current_seed(seed);
  PFL_CATCH(st, "generator_set_seed")
}

static void api_generator_free(pfl_generator g) {
  if (!g) return;
  delete g;
  g_live_generators.fetch_sub(1, std::memory_order_relaxed);
}

// CUDA entry points live in cuda.cpp.
int32_t pfl_cuda_device_count(int32_t *, pfl_status *);
int32_t pfl_cuda_device_name(int32_t, char *, int32_t, pfl_status *);
int32_t pfl_cuda_mem_info(int32_t, int64_t *, int64_t *, pfl_status *);
int32_t pfl_cuda_memory_stats(int32_t, int64_t *, int64_t *, int32_t, pfl_status *);
int32_t pfl_cuda_synchronize(int32_t, pfl_status *);
int32_t pfl_cuda_stream_new(int32_t, pfl_stream *, pfl_status *);
int32_t pfl_cuda_stream_synchronize(pfl_stream, pfl_status *);
void pfl_cuda_stream_free(pfl_stream);
int32_t pfl_cuda_graph_new(pfl_graph *, pfl_status *);
int32_t pfl_cuda_graph_capture_begin(pfl_graph, pfl_stream, pfl_status *);
int32_t pfl_cuda_graph_capture_end(pfl_graph, pfl_status *);
int32_t pfl_cuda_graph_replay(pfl_graph, pfl_status *);
void pfl_cuda_graph_free(pfl_graph);
int32_t pfl_cuda_graph_register_generator(pfl_graph, pfl_generator, pfl_status *);
int32_t pfl_cuda_set_current_stream(int32_t, pfl_stream, pfl_status *);
int32_t pfl_cuda_graph_capture_begin_shared(pfl_graph, pfl_stream, pfl_graph, pfl_status *);
// Process groups live in dist.cpp.
int32_t pfl_pg_new(const char *, int32_t, int32_t, int32_t, int64_t, int32_t, int32_t, pfl_pg *,
                   pfl_status *);
int32_t pfl_pg_all_reduce(pfl_pg, const pfl_tensor *, int32_t, pfl_status *);
int32_t pfl_pg_broadcast(pfl_pg, const pfl_tensor *, int32_t, int32_t, pfl_status *);
int32_t pfl_pg_all_gather(pfl_pg, pfl_tensor, pfl_tensor, pfl_status *);
int32_t pfl_pg_barrier(pfl_pg, pfl_status *);
void pfl_pg_free(pfl_pg);
int32_t pfl_pg_new_on(const char *, int32_t, int32_t, int32_t, int64_t, int32_t, int32_t, const char *,
                      const char *, pfl_pg *, pfl_status *);

static const pfl_api k_api = {
    sizeof(pfl_api),
    PFL_ABI_MAJOR,
    PFL_ABI_MINOR,
    api_caps,
    api_live_tensors,
    api_live_generators,
    api_set_num_threads,
    api_tensor_from_data,
    api_tensor_to_host,
    api_tensor_meta,
    api_tensor_free,
    api_tensor_free_many,
    api_op,
    api_set_requires_grad,
    api_grad_of,
    api_zero_grad,
    api_backward,
    api_grad,
    api_generator_new,
    api_generator_free,
    pfl_cuda_device_count,
    pfl_cuda_device_name,
    pfl_cuda_mem_info,
    pfl_cuda_memory_stats,
    pfl_cuda_synchronize,
    pfl_cuda_stream_new,
    pfl_cuda_stream_synchronize,
    pfl_cuda_stream_free,
    pfl_cuda_graph_new,
    pfl_cuda_graph_capture_begin,
    pfl_cuda_graph_capture_end,
    pfl_cuda_graph_replay,
    pfl_cuda_graph_free,
    api_set_matmul_precision,
    api_generator_set_seed,
    pfl_cuda_graph_register_generator,
    pfl_cuda_set_current_stream,
    pfl_cuda_graph_capture_begin_shared,
    api_host_cache_release,
    api_host_cache_stats,
    pfl_pg_new,
    pfl_pg_all_reduce,
    pfl_pg_broadcast,
    pfl_pg_all_gather,
    pfl_pg_barrier,
    pfl_pg_free,
    pfl_pg_new_on,
    api_thread_state,
    api_host_cache_small_stats,
    api_host_cache_reset_peak,
};

__attribute__((visibility("default"))) const pfl_api *pfl_get_api(uint32_t want_major,
                                                                   pfl_status *st) {
  if (want_major != PFL_ABI_MAJOR) {
    if (st) {
      st->code = PFL_ERR_ARG;
      std::snprintf(st->msg, PFL_MSG_LEN,
                    "pfl_get_api: caller wants ABI major %u, library has %d: rebuild one of them",
                    want_major, PFL_ABI_MAJOR);
    }
    return nullptr;
  }
  static std::once_flag once;
  std::call_once(once, init_threads);
  set_ok(st);
  return &k_api;
}

}  // extern "C"
