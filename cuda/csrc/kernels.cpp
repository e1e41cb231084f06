// kernels.cpp: the glue between pfl_api.op and the custom kernels of kernels/csrc (the
// PFL_OP_KERNEL_* codes). It checks the tensors, makes them contiguous, allocates the
// result and calls the CPU reference for CPU tensors or the CUDA version for CUDA tensors.
// The CUDA versions exist only in a library built with PFL_WITH_CUDA_KERNELS (CMake's
// PFL_CUDA_KERNELS, on by default when libtorch has CUDA).
#include <sstream>

#include "internal.h"
#include "kernels.h"

#ifndef PFL_WITH_CUDA_KERNELS
#define PFL_WITH_CUDA_KERNELS 0
#endif

#if PFL_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace pfl {
namespace {

std::string shape_of(const at::Tensor &t) {
  std::ostringstream o;
  o << t.sizes();
  return o.str();
}

void need_cuda_kernels(const char *name) {
#if !PFL_WITH_CUDA_KERNELS
  TORCH_CHECK_NOT_IMPLEMENTED(false, name,
                              ": this library was built without the CUDA kernels of kernels/ "
                              "(a CPU libtorch, or PFL_CUDA_KERNELS=OFF)");
#endif
}

#if PFL_WITH_CUDA_KERNELS
void check_cuda(int rc, const char *name, const char *msg) {
  TORCH_CHECK(rc == 0, name, ": CUDA error: ", msg);
}
void *current_stream(const at::Tensor &t) {
  return static_cast<void *>(c10::cuda::getCurrentCUDAStream(t.device().index()).stream());
}
#endif

// same_device fails unless every defined tensor of ts is on dev.
void same_device(const char *name, const at::Device &dev, std::initializer_list<at::Tensor> ts) {
  for (const auto &t : ts)
    if (t.defined() && t.device() != dev)
      throw ArgError(std::string(name) + ": tensors on " + dev.str() + " and " + t.device().str());
}

}  // namespace

// kernel_image_batch implements PFL_OP_KERNEL_IMAGE_BATCH:
// [images u8 [N, C0, H, W], index i64 [K, B], dy?, dx? (i64 [K, B]), flip? (bool [K, B]),
//  mean f32 [C] or [1], std f32 [C] or [1]] / [pad, channels] -> [K, B, C, H, W] f32.
std::vector<at::Tensor> kernel_image_batch(const std::vector<at::Tensor> &in, const int64_t *ints,
                                           int32_t n_ints) {
  const char *name = "kernel_image_batch";
  if (in.size() != 7 || n_ints < 2)
    throw ArgError(std::string(name) + ": takes 7 tensors and 2 ints");
  const at::Tensor &images = in[0], &index = in[1], &dy = in[2], &dx = in[3], &flip = in[4];
  at::Tensor mean = in[5], std = in[6];
  for (int i : {0, 1, 5, 6})
    if (!in[i].defined()) throw ArgError(std::string(name) + ": tensor " + std::to_string(i) + " is null");
  const int64_t pad = ints[0], c = ints[1];
  if (images.scalar_type() != at::kByte || images.dim() != 4)
    throw ArgError(std::string(name) + ": images must be uint8 [N, C, H, W], got " + shape_of(images));
  if (index.scalar_type() != at::kLong || index.dim() != 2)
    throw ArgError(std::string(name) + ": index must be int64 [K, B], got " + shape_of(index));
  for (const at::Tensor *t : {&dy, &dx})
    if (t->defined() && (t->scalar_type() != at::kLong || t->sizes() != index.sizes()))
      throw ArgError(std::string(name) + ": crop offsets must be int64 " + shape_of(index) + ", got " + shape_of(*t));
  if (flip.defined() && (flip.scalar_type() != at::kBool || flip.sizes() != index.sizes()))
    throw ArgError(std::string(name) + ": flip must be bool " + shape_of(index) + ", got " + shape_of(flip));
  const int64_t c0 = images.size(1);
  if (c < 1 || (c0 != c && c0 != 1))
    throw ArgError(std::string(name) + ": " + std::to_string(c) + " channels from " + std::to_string(c0) +
                   " stored (want equal, or 1 stored)");
  if (pad < 0) throw ArgError(std::string(name) + ": negative padding");
  for (at::Tensor *t : {&mean, &std}) {
    if (t->scalar_type() != at::kFloat || (t->numel() != c && t->numel() != 1))
      throw ArgError(std::string(name) + ": mean and std must be float32 with " + std::to_string(c) +
                     " or 1 values, got " + shape_of(*t));
    *t = t->reshape({-1}).expand({c}).contiguous();
  }
  const at::Device dev = images.device();
  same_device(name, dev, {index, dy, dx, flip, mean, std});
  at::NoGradGuard ng;
  const at::Tensor img = images.contiguous(), idx = index.contiguous();
  const at::Tensor ody = dy.defined() ? dy.contiguous() : dy, odx = dx.defined() ? dx.contiguous() : dx;
  const at::Tensor ofl = flip.defined() ? flip.contiguous() : flip;
  const int64_t h = images.size(2), w = images.size(3);
  at::Tensor out = at::empty({index.size(0), index.size(1), c, h, w}, images.options().dtype(at::kFloat));
  kernels::ImageBatch a{img.data_ptr<uint8_t>(),
                        images.size(0), c0, h, w,
                        idx.data_ptr<int64_t>(),
                        ody.defined() ? ody.data_ptr<int64_t>() : nullptr,
                        odx.defined() ? odx.data_ptr<int64_t>() : nullptr,
                        ofl.defined() ? ofl.data_ptr<bool>() : nullptr,
                        index.numel(), c,
                        mean.data_ptr<float>(), std.data_ptr<float>(),
                        pad, out.data_ptr<float>()};
  if (dev.is_cpu()) {
    int64_t bad = kernels::image_batch_ref(a);
    TORCH_CHECK_INDEX(bad < 0, name, ": index ", bad < 0 ? 0 : a.index[bad], " of row ", bad,
                      " is out of range for ", images.size(0), " images");
  } else {
    need_cuda_kernels(name);
#if PFL_WITH_CUDA_KERNELS
    c10::cuda::CUDAGuard guard(dev);
    char msg[256] = {0};
    check_cuda(kernels::image_batch_cuda(a, current_stream(out), msg, sizeof(msg)), name, msg);
#endif
  }
  return {out};
}

// kernel_weighted_sum implements PFL_OP_KERNEL_WEIGHTED_SUM_: [dsts..., srcs..., w[K]] -> 0,
// dst_i = sum_k w_k src_i[k] in kernels.h's order; every tensor float32 (or every one
// float64) on one device; w is converted to that type.
void kernel_weighted_sum(const std::vector<at::Tensor> &in) {
  const char *name = "kernel_weighted_sum_";
  if (in.size() < 3 || in.size() % 2 != 1)
    throw ArgError(std::string(name) + ": want n targets, n sources and the weights");
  const size_t n = (in.size() - 1) / 2;
  const at::Tensor &w0 = in.back();
  if (!w0.defined() || w0.dim() != 1) throw ArgError(std::string(name) + ": the weights must be one vector [K]");
  const int64_t k = w0.size(0);
  if (!in[0].defined()) throw ArgError(std::string(name) + ": null tensor in list");
  const at::ScalarType dt = in[0].scalar_type();
  const at::Device dev = in[0].device();
  if (dt != at::kFloat && dt != at::kDouble)
    throw ArgError(std::string(name) + ": float32 or float64 tensors only, got " + std::string(c10::toString(dt)));
  at::NoGradGuard ng;
  std::vector<at::Tensor> src(n), dst(n), out(n);  // out: contiguous targets (dst itself when it is)
  for (size_t j = 0; j < n; ++j) {
    const at::Tensor &d = in[j], &s = in[n + j];
    if (!d.defined() || !s.defined()) throw ArgError(std::string(name) + ": null tensor in list");
    if (d.scalar_type() != dt || s.scalar_type() != dt)
      throw ArgError(std::string(name) + ": tensor " + std::to_string(j) + " is not " + std::string(c10::toString(dt)) +
                     " like tensor 0 (one type per call)");
    same_device(name, dev, {d, s});
    if (s.dim() < 1 || s.size(0) != k || d.numel() * k != s.numel())
      throw ArgError(std::string(name) + ": source " + std::to_string(j) + " " + shape_of(s) + " is not [" +
                     std::to_string(k) + "] + the target's " + shape_of(d));
    src[j] = s.contiguous();
    dst[j] = d;
    out[j] = d.is_contiguous() ? d : at::empty(d.sizes(), d.options());
  }
  same_device(name, dev, {w0});
  const at::Tensor w = w0.to(dt).contiguous();
  if (dev.is_cpu()) {
    if (dt == at::kFloat) {
      std::vector<const float *> sp(n);
      std::vector<float *> dp(n);
      std::vector<int64_t> np(n);
      for (size_t j = 0; j < n; ++j) sp[j] = src[j].data_ptr<float>(), dp[j] = out[j].data_ptr<float>(), np[j] = out[j].numel();
      kernels::weighted_sum_ref<float>({sp.data(), dp.data(), np.data(), static_cast<int64_t>(n), w.data_ptr<float>(), k});
    } else {
      std::vector<const double *> sp(n);
      std::vector<double *> dp(n);
      std::vector<int64_t> np(n);
      for (size_t j = 0; j < n; ++j) sp[j] = src[j].data_ptr<double>(), dp[j] = out[j].data_ptr<double>(), np[j] = out[j].numel();
      kernels::weighted_sum_ref<double>({sp.data(), dp.data(), np.data(), static_cast<int64_t>(n), w.data_ptr<double>(), k});
    }
  } else {
    need_cuda_kernels(name);
#if PFL_WITH_CUDA_KERNELS
    c10::cuda::CUDAGuard guard(dev);
    // The table of kernels.h, filled on the host in pinned memory and copied to the device
    // on the current stream (the caching host allocator keeps the buffer until the copy is
    // done). A CUDA graph would record this copy's source address: not for capture.
    at::Tensor host = at::empty({static_cast<int64_t>(4 * n)}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
    int64_t *tab = host.data_ptr<int64_t>();
    int64_t blocks = 0;
    for (size_t j = 0; j < n; ++j) {
      const int64_t p = out[j].numel();
      tab[4 * j] = reinterpret_cast<int64_t>(src[j].data_ptr());
      tab[4 * j + 1] = reinterpret_cast<int64_t>(out[j].data_ptr());
      tab[4 * j + 2] = p;
      tab[4 * j + 3] = blocks;
      blocks += (p + kernels::weighted_sum_chunk - 1) / kernels::weighted_sum_chunk;
    }
    at::Tensor table = host.to(dev, /*non_blocking=*/true);
    char msg[256] = {0};
    check_cuda(kernels::weighted_sum_cuda(dt == at::kFloat ? 0 : 1, table.data_ptr<int64_t>(), static_cast<int64_t>(n),
                                          blocks, w.data_ptr(), k, current_stream(w), msg, sizeof(msg)),
               name, msg);
#endif
  }
  for (size_t j = 0; j < n; ++j)
    if (!out[j].is_same(dst[j])) dst[j].copy_(out[j]);
}

}  // namespace pfl
