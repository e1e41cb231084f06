/*
 * pfl.h: the C ABI of pfl's native library (libpfltorch.so), a thin layer over libtorch.
 *
 * Pure C99: no torch header, no C++ type, no bool, no long. The Go package `cuda` includes
 * only this file and loads the library at run time with dlopen, so one Go binary runs
 * against a CPU build (Debian's libtorch 1.13) and a CUDA build (libtorch of a PyTorch 2.x
 * install) of the same source.
 *
 * Versioning: the library exports exactly one symbol, pfl_get_api. It returns a vtable
 * whose layout is append-only within an ABI major version: new entry points and new op
 * codes are added at the end and bump PFL_ABI_MINOR; anything else bumps PFL_ABI_MAJOR.
 * A caller checks abi_major and struct_size before touching newer fields.
 *
 * Errors: every entry point catches every C++ exception and reports it through the
 * caller-owned pfl_status in the same call (no thread-local "last error"). The return value
 * is the same code as status->code; 0 means success.
 *
 * Thread state: libtorch keeps grad mode, autocast and the current CUDA stream in
 * thread-locals. Calls that run ops take a pfl_ctx and install those guards for the duration
 * of the call, so a call is correct whichever OS thread it runs on.
 */
#ifndef PFL_H
#define PFL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PFL_ABI_MAJOR 1
#define PFL_ABI_MINOR 10

/* PFL_MAX_DIMS is the largest tensor rank that crosses the boundary. */
#define PFL_MAX_DIMS 8
/* PFL_MSG_LEN is the size of the error message buffer in pfl_status. */
#define PFL_MSG_LEN 1024

/* Opaque handles. A pfl_tensor owns one reference to a libtorch tensor. */
typedef struct pfl_tensor_s *pfl_tensor;
typedef struct pfl_generator_s *pfl_generator;
typedef struct pfl_stream_s *pfl_stream;
typedef struct pfl_graph_s *pfl_graph;
typedef struct pfl_pg_s *pfl_pg;

/* Element types. Our own numbering, translated inside the library. */
enum pfl_dtype {
  PFL_F32 = 0,
  PFL_F64 = 1,
  PFL_BF16 = 2,
  PFL_I64 = 3,
  PFL_U8 = 4,
  PFL_BOOL = 5,
  PFL_F16 = 6,
  PFL_I32 = 7,
};

/* Device types. */
enum pfl_device_type {
  PFL_CPU = 0,
  PFL_CUDA = 1,
};

/* Status codes. */
enum pfl_code {
  PFL_OK = 0,
  PFL_ERR_TORCH = 1,           /* any other c10::Error */
  PFL_ERR_OOM = 2,             /* c10::OutOfMemoryError or std::bad_alloc */
  PFL_ERR_INDEX = 3,           /* c10::IndexError */
  PFL_ERR_VALUE = 4,           /* c10::ValueError */
  PFL_ERR_TYPE = 5,            /* c10::TypeError */
  PFL_ERR_NOT_IMPLEMENTED = 6, /* c10::NotImplementedError */
  PFL_ERR_CUDA = 7,            /* an asynchronous CUDA error: the context may be poisoned */
  PFL_ERR_NO_CUDA = 8,         /* the library was built without CUDA */
  PFL_ERR_ARG = 9,             /* the caller passed a bad argument (arity, null handle, enum) */
  PFL_ERR_STD = 10,            /* a std::exception that is not a c10::Error */
  PFL_ERR_UNKNOWN = 11,        /* anything else thrown */
  PFL_ERR_LINALG = 12,         /* c10::LinAlgError */
};

/* pfl_status carries a call's outcome. msg is NUL-terminated and has no C++ backtrace
 * (set PFL_BACKTRACE=1 in the environment to append it). */
typedef struct {
  int32_t code;
  char msg[PFL_MSG_LEN];
} pfl_status;

/* pfl_meta describes a tensor: returned with every tensor a call produces, so the caller
 * never needs a second call to learn a result's shape. */
typedef struct {
  int32_t dtype;         /* enum pfl_dtype, or -1 for a type pfl does not name */
  int32_t device_type;   /* enum pfl_device_type */
  int32_t device_index;  /* -1 for CPU */
  int32_t ndim;
  int32_t requires_grad; /* 0 or 1 */
  int32_t is_leaf;       /* 0 or 1 */
  int64_t dims[PFL_MAX_DIMS];
} pfl_meta;

/* pfl_ctx is the thread-local state a call runs under. */
typedef struct {
  int32_t grad_enabled; /* 0: no-grad mode (at::NoGradGuard) */
  int32_t autocast;     /* -1: off; else the enum pfl_dtype to autocast to (PFL_BF16) */
  pfl_stream stream;    /* NULL: the device's current default stream */
} pfl_ctx;

/* pfl_caps describes the build. */
typedef struct {
  char torch_version[32]; /* e.g. "1.13.0" */
  int32_t abi_major, abi_minor;
  int32_t has_cuda;        /* built against libtorch_cuda */
  int32_t cuda_available;  /* has_cuda and a device is visible */
  int32_t has_bf16;        /* bf16 tensors and CPU bf16 autocast */
  int32_t has_sdpa;        /* at::scaled_dot_product_attention exists (torch >= 2.0) */
  int32_t has_cuda_graphs; /* at::cuda::CUDAGraph is compiled in */
  int32_t cxx11_abi;       /* _GLIBCXX_USE_CXX11_ABI of the build */
  int32_t num_threads;     /* at::get_num_threads() now */
  int32_t cuda_version;    /* CUDA runtime version (e.g. 13000), 0 without CUDA */
} pfl_caps;

/*
 * Op codes for pfl_api.op. Inputs are tensors (in), integer arguments (ints) and real
 * arguments (dbls); "gen" is an optional pfl_generator. Each line says in / ints / dbls ->
 * outputs. "?" marks an optional input passed as NULL. Out-of-place ops return new tensors;
 * ops ending in _ modify their inputs and return none. New codes are appended only.
 */
enum pfl_op {
  /* creation: ints = [dtype, device_type, device_index, dims...] */
  PFL_OP_ZEROS = 0,   /* - / spec / - -> 1 */
  PFL_OP_ONES = 1,    /* - / spec / - -> 1 */
  PFL_OP_FULL = 2,    /* - / spec / [value] -> 1 */
  PFL_OP_ARANGE = 3,  /* - / [dtype, device_type, device_index] / [start, end, step] -> 1 */
  PFL_OP_RAND = 4,    /* - / spec / - , gen -> 1: U[0,1) */
  PFL_OP_RANDN = 5,   /* - / spec / - , gen -> 1: N(0,1) */
  PFL_OP_RANDINT = 6, /* - / [low, high, device_type, device_index, dims...] / -, gen -> 1 (i64) */
  PFL_OP_RANDPERM = 7,/* - / [n, device_type, device_index] / -, gen -> 1 (i64) */
  PFL_OP_UNIFORM_ = 8,/* [x] / - / [from, to], gen -> 0 */
  PFL_OP_NORMAL_ = 9, /* [x] / - / [mean, std], gen -> 0 */

  /* conversion and copies */
  PFL_OP_TO = 10,         /* [x] / [dtype or -1, device_type or -1, device_index] / - -> 1 */
  PFL_OP_CLONE = 11,      /* [x] -> 1 */
  PFL_OP_DETACH = 12,     /* [x] -> 1 */
  PFL_OP_CONTIGUOUS = 13, /* [x] -> 1 */
  PFL_OP_COPY_ = 14,      /* [dst, src] -> 0 */

  /* shape */
  PFL_OP_RESHAPE = 20,      /* [x] / dims -> 1 */
  PFL_OP_VIEW = 21,         /* [x] / dims -> 1 */
  PFL_OP_PERMUTE = 22,      /* [x] / dims -> 1 */
  PFL_OP_TRANSPOSE = 23,    /* [x] / [d0, d1] -> 1 */
  PFL_OP_EXPAND = 24,       /* [x] / dims -> 1 */
  PFL_OP_SQUEEZE = 25,      /* [x] / [dim] -> 1 */
  PFL_OP_UNSQUEEZE = 26,    /* [x] / [dim] -> 1 */
  PFL_OP_CAT = 27,          /* xs / [dim] -> 1 */
  PFL_OP_STACK = 28,        /* xs / [dim] -> 1 */
  PFL_OP_NARROW = 29,       /* [x] / [dim, start, length] -> 1 */
  PFL_OP_SLICE = 30,        /* [x] / [dim, start, end, step] -> 1 */
  PFL_OP_SELECT = 31,       /* [x] / [dim, index] -> 1 */
  PFL_OP_INDEX_SELECT = 32, /* [x, index(i64)] / [dim] -> 1 */
  PFL_OP_GATHER = 33,       /* [x, index(i64)] / [dim] -> 1 */
  PFL_OP_SCATTER_ADD = 34,  /* [x, index(i64), src] / [dim] -> 1 */
  PFL_OP_SPLIT = 35,        /* [x] / [dim, sizes...] -> len(sizes) */
  PFL_OP_FLATTEN = 36,      /* [x] / [start, end] -> 1 */
  PFL_OP_REPEAT = 37,       /* [x] / repeats -> 1 */

  /* elementwise arithmetic (broadcasting) */
  PFL_OP_ADD = 40,        /* [a, b] / - / [alpha] -> 1: a + alpha*b */
  PFL_OP_SUB = 41,        /* [a, b] / - / [alpha] -> 1: a - alpha*b */
  PFL_OP_MUL = 42,        /* [a, b] -> 1 */
  PFL_OP_DIV = 43,        /* [a, b] -> 1 */
  PFL_OP_ADD_SCALAR = 44, /* [a] / - / [s] -> 1 */
  PFL_OP_MUL_SCALAR = 45, /* [a] / - / [s] -> 1 */
  PFL_OP_DIV_SCALAR = 46, /* [a] / - / [s] -> 1 */
  PFL_OP_POW_SCALAR = 47, /* [a] / - / [exponent] -> 1 */
  PFL_OP_NEG = 48,
  PFL_OP_EXP = 49,
  PFL_OP_LOG = 50,
  PFL_OP_ABS = 51,
  PFL_OP_SQRT = 52,
  PFL_OP_CLAMP = 53,       /* [a] / [has_min, has_max] / [min, max] -> 1 */
  PFL_OP_WHERE = 54,       /* [cond(bool), a, b] -> 1 */
  PFL_OP_EQ = 55,          /* [a, b] -> 1 (bool) */
  PFL_OP_LT = 56,          /* [a, b] -> 1 (bool) */
  PFL_OP_GT = 57,          /* [a, b] -> 1 (bool) */
  PFL_OP_MASKED_FILL = 58, /* [x, mask(bool)] / - / [value] -> 1 */

  /* linear algebra */
  PFL_OP_MATMUL = 60,  /* [a, b] -> 1 */
  PFL_OP_BMM = 61,     /* [a, b] -> 1 */
  PFL_OP_BADDBMM = 62, /* [c, a, b] / - / [beta, alpha] -> 1: beta*c + alpha*(a@b) */
  PFL_OP_LINEAR = 63,  /* [x, w, b?] -> 1: x w^T + b */
  PFL_OP_CDIST = 64,   /* [a, b] / - / [p] -> 1 */

  /* neural-network functions */
  PFL_OP_CONV2D = 70,      /* [x, w, b?] / [sh, sw, ph, pw, dh, dw, groups] -> 1 */
  PFL_OP_MAX_POOL2D = 71,  /* [x] / [kh, kw, sh, sw, ph, pw] -> 1 */
  PFL_OP_AVG_POOL2D = 72,  /* [x] / [kh, kw, sh, sw, ph, pw] -> 1 */
  PFL_OP_ADAPTIVE_AVG_POOL2D = 73, /* [x] / [oh, ow] -> 1 */
  PFL_OP_LAYER_NORM = 74,  /* [x, w?, b?] / [n_norm_dims] / [eps] -> 1: per-row affine, below */
  PFL_OP_BATCH_NORM = 75,  /* [x, w?, b?, running_mean?, running_var?] / [training] / [momentum, eps] -> 1 */
  PFL_OP_SOFTMAX = 76,     /* [x] / [dim] -> 1 */
  PFL_OP_LOG_SOFTMAX = 77, /* [x] / [dim] -> 1 */
  PFL_OP_GELU = 78,        /* [x] / [tanh_approx] -> 1 */
  PFL_OP_RELU = 79,
  PFL_OP_TANH = 80,
  PFL_OP_SIGMOID = 81,
  PFL_OP_DROPOUT = 82,       /* [x] / [train] / [p], gen -> 1 */
  PFL_OP_CROSS_ENTROPY = 83, /* [logits(N,C), target(N,i64), weight(N)?] / [reduction] / [label_smoothing] -> 1 */
  PFL_OP_EMBEDDING = 84,     /* [weight(V,D), index(i64)] -> 1 */
  PFL_OP_SDPA = 85,          /* [q, k, v, mask?] / [is_causal, has_scale] / [dropout_p, scale], gen -> 1 */

  /* reductions */
  PFL_OP_SUM = 90,    /* [x] / [keepdim, dims...] (no dims: all) -> 1 */
  PFL_OP_MEAN = 91,   /* [x] / [keepdim, dims...] -> 1 */
  PFL_OP_AMAX = 92,   /* [x] / [keepdim, dims...] -> 1 */
  PFL_OP_ARGMAX = 93, /* [x] / [dim, keepdim] -> 1 (i64) */
  PFL_OP_TOPK = 94,   /* [x] / [k, dim, largest, sorted] -> 2: values, indices */

  /* multi-tensor updates: n tensors per list, always under no-grad */
  PFL_OP_FOREACH_ADD_ = 100,        /* [xs..., ys...] / - / [alpha] -> 0: x += alpha*y */
  PFL_OP_FOREACH_ADD_SCALAR_ = 101, /* xs / - / [s] -> 0 */
  PFL_OP_FOREACH_MUL_SCALAR_ = 102, /* xs / - / [s] -> 0 */
  PFL_OP_FOREACH_MUL_ = 103,        /* [xs..., ys...] -> 0: x *= y */
  PFL_OP_FOREACH_ADDCMUL_ = 104,    /* [xs..., t1s..., t2s...] / - / [v] -> 0: x += v*t1*t2 */
  PFL_OP_FOREACH_ADDCDIV_ = 105,    /* [xs..., t1s..., t2s...] / - / [v] -> 0: x += v*t1/t2 */
  PFL_OP_FOREACH_ZERO_ = 106,       /* xs -> 0 */
  PFL_OP_FOREACH_COPY_ = 107,       /* [dsts..., srcs...] -> 0 */
  PFL_OP_FOREACH_SQRT = 108,        /* xs -> n */
  PFL_OP_FOREACH_LERP_ = 109,       /* [xs..., ys...] / - / [w] -> 0: x += w*(y-x) */

  /* added in ABI 1.1 */
  PFL_OP_INDEX_COPY_ = 110, /* [dst, index(i64), src] / [dim] -> 0: dst[..., index[i], ...] = src[..., i, ...], no autograd */

  /* added in ABI 1.3 */
  PFL_OP_FOREACH_WEIGHTED_SUM_ = 111, /* [dsts..., srcs..., w[K]] -> 0: dst_i = sum_k w_k src_i[k], no autograd */

  /* added in ABI 1.5: the custom kernels of kernels/ (below) */
  PFL_OP_KERNEL_IMAGE_BATCH = 112,   /* [images, index, dy?, dx?, flip?, mean, std] / [pad, channels] -> 1 */
  PFL_OP_KERNEL_WEIGHTED_SUM_ = 113, /* [dsts..., srcs..., w[K]] -> 0, no autograd */
};

/*
 * PFL_OP_LAYER_NORM normalizes x over its last n_norm_dims dimensions (no affine inside),
 * then computes y*w + b with broadcasting. w and b may therefore be [D] (one affine) or
 * [K, 1, ..., D] (one affine per client row of a client-stacked model).
 *
 * PFL_OP_CROSS_ENTROPY reduction: 0 none (per sample), 1 mean, 2 sum. With a per-sample
 * weight w, mean is sum_i w_i l_i / sum_i w_i and sum is sum_i w_i l_i.
 *
 * PFL_OP_SDPA takes q [..., L, E], k [..., S, E], v [..., S, Ev] and a mask broadcastable to
 * [..., L, S]: bool (true = attend) or additive float. Without has_scale the scale is
 * 1/sqrt(E). On torch >= 2.0 with dropout_p == 0 it calls at::scaled_dot_product_attention;
 * otherwise (or with dropout, which needs the explicit generator) it computes
 * softmax(q k^T * scale + mask) v exactly.
 *
 * The PFL_OP_KERNEL_* codes run pfl's own kernels (kernels/csrc/kernels.h states each one's
 * arithmetic): on CPU tensors their C++ reference, on CUDA tensors their CUDA version, which
 * computes the same operations in the same order. A library built without the CUDA
 * versions answers PFL_ERR_NOT_IMPLEMENTED for CUDA tensors. No autograd.
 *
 * PFL_OP_KERNEL_IMAGE_BATCH builds a client-stacked batch [K, B, C, H, W] float32 from uint8
 * images [N, C0, H, W] (C0 = C, or 1 for a grey set served as C channels): row (k, b) is
 * image index[k, b], scaled to [0, 1], cropped at (dy, dx) from the image zero-padded by pad
 * and mirrored where flip is set, then normalized by mean and std ([C] or [1], float32).
 * dy, dx (int64 [K, B]) and flip (bool [K, B]) may be NULL (no crop, no flip). A CPU index
 * out of range is PFL_ERR_INDEX; on CUDA it makes that row NaN.
 *
 * PFL_OP_KERNEL_WEIGHTED_SUM_ does what PFL_OP_FOREACH_WEIGHTED_SUM_ does, in one kernel
 * launch on CUDA and with a fixed summation order: acc = fma(w_k, src[k], acc) for
 * k = 0..K-1 from acc = 0. All tensors float32, or all float64, on one device.
 */

/* pfl_api is the vtable returned by pfl_get_api. Append-only within a major version. */
typedef struct pfl_api {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  int32_t (*caps)(pfl_caps *out, pfl_status *st);
  int64_t (*live_tensors)(void);
  int64_t (*live_generators)(void);
  /* set_num_threads makes n the intra-op thread count of libtorch, of OpenBLAS (its pthreads
   * pool; its OpenMP build follows each thread's count) and of every OS thread that calls in.
   * Until it is called the count is 1, or what OMP_NUM_THREADS or MKL_NUM_THREADS gives. An
   * explicit OPENBLAS_NUM_THREADS is left to OpenBLAS. */
  int32_t (*set_num_threads)(int32_t n, pfl_status *st);

  /* tensors */
  int32_t (*tensor_from_data)(const void *data, int32_t dtype, const int64_t *dims, int32_t ndim,
                              int32_t device_type, int32_t device_index, pfl_tensor *out,
                              pfl_meta *meta, pfl_status *st);
  /* tensor_to_host converts t to dtype on the CPU, contiguous, and copies nbytes into dst;
   * nbytes must equal numel * element size of dtype. */
  int32_t (*tensor_to_host)(pfl_tensor t, int32_t dtype, void *dst, int64_t nbytes,
                            pfl_status *st);
  int32_t (*tensor_meta)(pfl_tensor t, pfl_meta *meta, pfl_status *st);
  void (*tensor_free)(pfl_tensor t);
  void (*tensor_free_many)(const pfl_tensor *ts, int64_t n);

  /* op runs one op (enum pfl_op). out and meta have room for n_out results; the call fails
   * with PFL_ERR_ARG if the op produces a different number. */
  int32_t (*op)(const pfl_ctx *ctx, int32_t op, const pfl_tensor *in, int32_t n_in,
                const int64_t *ints, int32_t n_ints, const double *dbls, int32_t n_dbls,
                pfl_generator gen, pfl_tensor *out, pfl_meta *meta, int32_t n_out,
                pfl_status *st);

  /* autograd */
  int32_t (*set_requires_grad)(pfl_tensor t, int32_t flag, pfl_status *st);
  /* grad_of returns t.grad(), or *out = NULL when it is undefined. */
  int32_t (*grad_of)(pfl_tensor t, pfl_tensor *out, pfl_meta *meta, pfl_status *st);
  /* zero_grad zeroes (or, with set_to_none, drops) the .grad of n tensors. */
  int32_t (*zero_grad)(const pfl_tensor *ts, int64_t n, int32_t set_to_none, pfl_status *st);
  /* backward accumulates d(sum_i <outs_i, grad_outs_i>)/d(leaf) into the leaves' .grad.
   * grad_outs may be NULL (or hold NULL entries) for scalar outputs. */
  int32_t (*backward)(const pfl_ctx *ctx, const pfl_tensor *outs, const pfl_tensor *grad_outs,
                      int32_t n_outs, int32_t retain_graph, pfl_status *st);
  /* grad computes the vector-Jacobian product sum_i (d outs_i / d inputs_j)^T grad_outs_i for
   * every input j in one traversal (torch::autograd::grad). An input the outputs do not
   * depend on yields *out[j] = NULL when allow_unused, an error otherwise. */
  int32_t (*grad)(const pfl_ctx *ctx, const pfl_tensor *outs, const pfl_tensor *grad_outs,
                  int32_t n_outs, const pfl_tensor *inputs, int32_t n_inputs,
                  int32_t retain_graph, int32_t create_graph, int32_t allow_unused,
                  pfl_tensor *out, pfl_meta *meta, pfl_status *st);

  /* random number generators: every random op takes one explicitly */
  int32_t (*generator_new)(uint64_t seed, int32_t device_type, int32_t device_index,
                           pfl_generator *out, pfl_status *st);
  void (*generator_free)(pfl_generator g);

  /* CUDA: each returns PFL_ERR_NO_CUDA in a CPU build */
  int32_t (*cuda_device_count)(int32_t *out, pfl_status *st);
  int32_t (*cuda_device_name)(int32_t device, char *buf, int32_t len, pfl_status *st);
  int32_t (*cuda_mem_info)(int32_t device, int64_t *free_bytes, int64_t *total_bytes,
                           pfl_status *st);
  /* cuda_memory_stats reports the caching allocator's bytes allocated now and at peak
   * since the last reset; reset_peak resets the peak after reading. */
  int32_t (*cuda_memory_stats)(int32_t device, int64_t *allocated, int64_t *peak,
                               int32_t reset_peak, pfl_status *st);
  int32_t (*cuda_synchronize)(int32_t device, pfl_status *st);
  int32_t (*cuda_stream_new)(int32_t device, pfl_stream *out, pfl_status *st);
  int32_t (*cuda_stream_synchronize)(pfl_stream s, pfl_status *st);
  void (*cuda_stream_free)(pfl_stream s);
  int32_t (*cuda_graph_new)(pfl_graph *out, pfl_status *st);
  /* cuda_graph_capture_begin starts capturing work issued on stream s (not the default
   * stream); calls that should be captured pass s in their pfl_ctx. */
  int32_t (*cuda_graph_capture_begin)(pfl_graph g, pfl_stream s, pfl_status *st);
  int32_t (*cuda_graph_capture_end)(pfl_graph g, pfl_status *st);
  int32_t (*cuda_graph_replay)(pfl_graph g, pfl_status *st);
  void (*cuda_graph_free)(pfl_graph g);

  /* set_matmul_precision is at::globalContext().setFloat32MatmulPrecision: "highest"
   * (float32), "high" (TF32 on CUDA) or "medium". Added in ABI 1.2. */
  int32_t (*set_matmul_precision)(const char *precision, pfl_status *st);

  /* Added in ABI 1.3, for a training step captured once as a CUDA graph and replayed in
   * every round. generator_set_seed reseeds g in place (its draws then equal those of a new
   * generator with that seed), so a graph that reads g sees each round's seed.
   * cuda_graph_register_generator makes g's draws inside a capture follow g's seed and
   * offset at every replay (torch >= 2.4; a custom generator used in a capture must be
   * registered before capture_begin). cuda_set_current_stream makes s (NULL: the device's
   * default stream) the calling thread's current stream for device, as
   * c10::cuda::setCurrentCUDAStream does. */
  int32_t (*generator_set_seed)(pfl_generator g, uint64_t seed, pfl_status *st);
  int32_t (*cuda_graph_register_generator)(pfl_graph g, pfl_generator gen, pfl_status *st);
  int32_t (*cuda_set_current_stream)(int32_t device, pfl_stream s, pfl_status *st);

  /* Added in ABI 1.4. cuda_graph_capture_begin_shared is cuda_graph_capture_begin with the
   * capture's memory taken from the private pool of pool_of (a graph captured before), as
   * torch.cuda.graph(pool=other.pool()) does: the training steps of a run's phases, replayed
   * one after another on one stream and never at once, then hold one activation footprint
   * instead of one each. */
  int32_t (*cuda_graph_capture_begin_shared)(pfl_graph g, pfl_stream s, pfl_graph pool_of, pfl_status *st);

  /* Added in ABI 1.6: the caching allocator of large CPU tensors (host_cache.cpp).
   * host_cache_release frees its idle blocks. host_cache_stats fills out[0..3] with the idle
   * bytes, the live bytes, and the requests served from idle blocks and from the system;
   * it returns 0 (out untouched) when the cache is off (PFL_CPU_CACHE=0, or a build against
   * libtorch 2.x), 1 otherwise. */
  void (*host_cache_release)(void);
  int32_t (*host_cache_stats)(int64_t *out);

  /* Added in ABI 1.7: a c10d process group for training across processes (dist.cpp).
   * pg_new joins the group of world processes through a TCP store at host:port (rank 0
   * serves it), with Gloo for CPU tensors (device_type PFL_CPU) or NCCL for CUDA tensors
   * (device_type PFL_CUDA, device_index this process's GPU); it fails with PFL_ERR_NOT_IMPLEMENTED
   * when the library was built without that backend. timeout_ms bounds the rendezvous and
   * every collective: a peer that is gone or silent makes the call fail, never hang.
   * pg_all_reduce sums n tensors in place across the group in one collective (the tensors
   * are flattened into one buffer per dtype, reduced, and copied back). pg_broadcast copies
   * root's n tensors into everyone's, in one collective per dtype. pg_all_gather fills out
   * [world, in...] with every rank's in, row r from rank r. pg_barrier returns when every
   * rank has entered it. All tensors must be dense, on the group's device. No autograd. */
  int32_t (*pg_new)(const char *host, int32_t port, int32_t rank, int32_t world, int64_t timeout_ms,
                    int32_t device_type, int32_t device_index, pfl_pg *out, pfl_status *st);
  int32_t (*pg_all_reduce)(pfl_pg pg, const pfl_tensor *ts, int32_t n, pfl_status *st);
  int32_t (*pg_broadcast)(pfl_pg pg, const pfl_tensor *ts, int32_t n, int32_t root, pfl_status *st);
  int32_t (*pg_all_gather)(pfl_pg pg, pfl_tensor out, pfl_tensor in, pfl_status *st);
  int32_t (*pg_barrier)(pfl_pg pg, pfl_status *st);
  void (*pg_free)(pfl_pg pg);

  /* Added in ABI 1.8: pg_new_on is pg_new with the network of Gloo's device chosen by the
   * caller: ifaces, a comma-separated list of interface names (GLOO_SOCKET_IFNAME's form),
   * makes one Gloo TCP device per interface; else local, an address of this machine (or a
   * name resolving to one), makes the device bound to it; both empty or NULL: the address
   * the hostname resolves to, as pg_new does. NCCL groups ignore both. Since 1.8, in pg_new
   * too, connecting to the store and waiting for every rank share one deadline of timeout_ms,
   * and a rank that never comes is named; the backend's own connections, made once every
   * rank is there, are bounded by timeout_ms again (a caller that needs one bound for the
   * whole call enforces it itself). */
  int32_t (*pg_new_on)(const char *host, int32_t port, int32_t rank, int32_t world, int64_t timeout_ms,
                       int32_t device_type, int32_t device_index, const char *ifaces, const char *local,
                       pfl_pg *out, pfl_status *st);

  /* Added in ABI 1.9: thread_state fills out[0..3] with what the calling OS thread computes
   * with: its OpenMP thread count (omp_get_max_threads, per thread; -1 without OpenMP),
   * libtorch's intra-op count (at::get_num_threads), OpenBLAS's thread count (openblas_get_num_threads; -1 without
   * OpenBLAS) and OpenBLAS's build (openblas_get_parallel: 0 serial, 1 pthreads, 2 OpenMP;
   * -1 without OpenBLAS). It does not call ensure_threads: a thread that has not called in yet
   * reports the OpenMP runtime's default in out[0]. */
  void (*thread_state)(int32_t *out);

  /* Added in ABI 1.10: host_cache_small_stats fills out[0..2] with the bytes held by tensors
   * in the blocks the CPU cache leaves to glibc (under its 1 MiB threshold, as
   * malloc_usable_size counts them), the bytes glibc's heaps hold free (mallinfo2's
   * fordblks), and the peak of the bytes CPU tensors held (the cache's live blocks and the
   * small ones) since host_cache_reset_peak; it returns 0 (out untouched) when the cache is
   * off, 1 otherwise. Deep, narrow models keep most of their activations in small blocks: a
   * measure of a step's memory needs them beside host_cache_stats' live bytes, and once
   * freed they stay in glibc's heaps until host_cache_release trims them. */
  int32_t (*host_cache_small_stats)(int64_t *out);
  void (*host_cache_reset_peak)(void);
} pfl_api;

/* pfl_get_api returns the vtable if want_major matches PFL_ABI_MAJOR, else NULL with st set. */
const pfl_api *pfl_get_api(uint32_t want_major, pfl_status *st);
typedef const pfl_api *(*pfl_get_api_fn)(uint32_t want_major, pfl_status *st);

#ifdef __cplusplus
}
#endif

#endif /* PFL_H */
