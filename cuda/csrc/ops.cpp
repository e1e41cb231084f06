// ops.cpp: pfl_api.op, one switch over enum pfl_op. Each case checks its own arity, so a
// caller's mistake is an ArgError naming the op rather than a crash.
#include <cmath>
#include <sstream>

#include "internal.h"

namespace pfl {
namespace {

struct Args {
  const char *name;
  const std::vector<at::Tensor> &in;
  const int64_t *ints;
  int32_t n_ints;
  const double *dbls;
  int32_t n_dbls;

  void need(int32_t n_in_min, int32_t n_in_max, int32_t n_ints_min, int32_t n_dbls_min) const {
    int32_t n = static_cast<int32_t>(in.size());
    if (n < n_in_min || n > n_in_max)
      throw ArgError(std::string(name) + ": takes " + std::to_string(n_in_min) + ".." +
                     std::to_string(n_in_max) + " tensors, got " + std::to_string(n));
    if (n_ints < n_ints_min)
      throw ArgError(std::string(name) + ": needs " + std::to_string(n_ints_min) +
                     " int arguments, got " + std::to_string(n_ints));
    if (n_dbls < n_dbls_min)
      throw ArgError(std::string(name) + ": needs " + std::to_string(n_dbls_min) +
                     " real arguments, got " + std::to_string(n_dbls));
    for (int32_t i = 0; i < n_in_min; ++i)
      if (!in[i].defined())
        throw ArgError(std::string(name) + ": tensor " + std::to_string(i) + " is null");
  }
  const at::Tensor &t(int i) const { return in[i]; }
  // opt returns the i-th input or an undefined tensor when absent.
  at::Tensor opt(size_t i) const { return i < in.size() ? in[i] : at::Tensor(); }
  int64_t i(int k) const { return ints[k]; }
  double d(int k) const { return dbls[k]; }
  std::vector<int64_t> ints_from(int k) const {
    return k < n_ints ? std::vector<int64_t>(ints + k, ints + n_ints) : std::vector<int64_t>();
  }
  // list returns tensors [k*n, (k+1)*n) of an input made of equal-length lists.
  std::vector<at::Tensor> list(int k, int lists) const {
    if (in.size() % lists != 0)
      throw ArgError(std::string(name) + ": " + std::to_string(in.size()) +
                     " tensors do not split into " + std::to_string(lists) + " equal lists");
    size_t n = in.size() / lists;
    for (size_t j = 0; j < in.size(); ++j)
      if (!in[j].defined()) throw ArgError(std::string(name) + ": null tensor in list");
    return std::vector<at::Tensor>(in.begin() + k * n, in.begin() + (k + 1) * n);
  }
};

std::string shape_str(const at::Tensor &t) {
  std::ostringstream o;
  o << t.sizes();
  return o.str();
}

at::TensorOptions spec_options(const Args &a) {
  return at::TensorOptions()
      .dtype(to_scalar_type(static_cast<int32_t>(a.i(0))))
      .device(to_device(static_cast<int32_t>(a.i(1)), static_cast<int32_t>(a.i(2))));
}

// Exact attention: softmax(q k^T * scale + mask) v, with dropout drawn from gen. This is
// the fallback before torch 2.0 and whenever dropout needs our explicit generator.
at::Tensor attention_math(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                          const at::Tensor &mask, bool causal, double scale, double p,
                          c10::optional<at::Generator> gen) {
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    int64_t L = q.size(-2), S = k.size(-2);
    at::Tensor keep = at::ones({L, S}, q.options().dtype(at::kBool)).tril();
    s = s.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  if (mask.defined()) {
    if (mask.scalar_type() == at::kBool)
      s = s.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
    else
      s = s + mask;
  }
  at::Tensor w = at::softmax(s, -1);
  if (p > 0) {
    at::Tensor keep = at::empty_like(w).bernoulli_(1 - p, gen);
    w = w * keep / (1 - p);
  }
  return at::matmul(w, v);
}

std::vector<at::Tensor> one(at::Tensor t) { return {std::move(t)}; }

}  // namespace

std::vector<at::Tensor> run_op(int32_t op, const std::vector<at::Tensor> &in,
                               const int64_t *ints, int32_t n_ints, const double *dbls,
                               int32_t n_dbls, c10::optional<at::Generator> gen) {
  Args a{"op", in, ints, n_ints, dbls, n_dbls};
  switch (op) {
    // creation
    case PFL_OP_ZEROS: a.name = "zeros"; a.need(0, 0, 3, 0);
      return one(at::zeros(a.ints_from(3), spec_options(a)));
    case PFL_OP_ONES: a.name = "ones"; a.need(0, 0, 3, 0);
      return one(at::ones(a.ints_from(3), spec_options(a)));
    case PFL_OP_FULL: a.name = "full"; a.need(0, 0, 3, 1);
      return one(at::full(a.ints_from(3), a.d(0), spec_options(a)));
    case PFL_OP_ARANGE: a.name = "arange"; a.need(0, 0, 3, 3);
      return one(at::arange(a.d(0), a.d(1), a.d(2), spec_options(a)));
    case PFL_OP_RAND: a.name = "rand"; a.need(0, 0, 3, 0);
      return one(at::rand(a.ints_from(3), gen, spec_options(a)));
    case PFL_OP_RANDN: a.name = "randn"; a.need(0, 0, 3, 0);
      return one(at::randn(a.ints_from(3), gen, spec_options(a)));
    case PFL_OP_RANDINT: {
      a.name = "randint"; a.need(0, 0, 4, 0);
      auto o = at::TensorOptions().dtype(at::kLong).device(
          to_device(static_cast<int32_t>(a.i(2)), static_cast<int32_t>(a.i(3))));
      return one(at::randint(a.i(0), a.i(1), a.ints_from(4), gen, o));
    }
    case PFL_OP_RANDPERM: {
      a.name = "randperm"; a.need(0, 0, 3, 0);
      auto o = at::TensorOptions().dtype(at::kLong).device(
          to_device(static_cast<int32_t>(a.i(1)), static_cast<int32_t>(a.i(2))));
      return one(at::randperm(a.i(0), gen, o));
    }
    case PFL_OP_UNIFORM_: {
      a.name = "uniform_"; a.need(1, 1, 0, 2);
      at::NoGradGuard ng;
      at::Tensor x = a.t(0);
      x.uniform_(a.d(0), a.d(1), gen);
      return {};
    }
    case PFL_OP_NORMAL_: {
      a.name = "normal_"; a.need(1, 1, 0, 2);
      at::NoGradGuard ng;
      at::Tensor x = a.t(0);
      x.normal_(a.d(0), a.d(1), gen);
      return {};
    }

    // conversion
    case PFL_OP_TO: {
      a.name = "to"; a.need(1, 1, 3, 0);
      const at::Tensor &x = a.t(0);
      at::ScalarType dt = a.i(0) < 0 ? x.scalar_type() : to_scalar_type(int32_t(a.i(0)));
      at::Device dev = a.i(1) < 0 ? x.device() : to_device(int32_t(a.i(1)), int32_t(a.i(2)));
      return one(x.to(dev, dt));
    }
    case PFL_OP_CLONE: a.name = "clone"; a.need(1, 1, 0, 0); return one(a.t(0).clone());
    case PFL_OP_DETACH: a.name = "detach"; a.need(1, 1, 0, 0); return one(a.t(0).detach());
    case PFL_OP_CONTIGUOUS: a.name = "contiguous"; a.need(1, 1, 0, 0);
      return one(a.t(0).contiguous());
    case PFL_OP_COPY_: {
      a.name = "copy_"; a.need(2, 2, 0, 0);
      at::Tensor dst = a.t(0);
      dst.copy_(a.t(1));
      return {};
    }

    // shape
    case PFL_OP_RESHAPE: a.name = "reshape"; a.need(1, 1, 0, 0);
      return one(a.t(0).reshape(a.ints_from(0)));
    case PFL_OP_VIEW: a.name = "view"; a.need(1, 1, 0, 0); return one(a.t(0).view(a.ints_from(0)));
    case PFL_OP_PERMUTE: a.name = "permute"; a.need(1, 1, 0, 0);
      return one(a.t(0).permute(a.ints_from(0)));
    case PFL_OP_TRANSPOSE: a.name = "transpose"; a.need(1, 1, 2, 0);
      return one(a.t(0).transpose(a.i(0), a.i(1)));
    case PFL_OP_EXPAND: a.name = "expand"; a.need(1, 1, 0, 0);
      return one(a.t(0).expand(a.ints_from(0)));
    case PFL_OP_SQUEEZE: a.name = "squeeze"; a.need(1, 1, 1, 0);
      return one(a.t(0).squeeze(a.i(0)));
    case PFL_OP_UNSQUEEZE: a.name = "unsqueeze"; a.need(1, 1, 1, 0);
      return one(a.t(0).unsqueeze(a.i(0)));
    case PFL_OP_CAT: a.name = "cat"; a.need(1, 1 << 30, 1, 0); return one(at::cat(a.list(0, 1), a.i(0)));
    case PFL_OP_STACK: a.name = "stack"; a.need(1, 1 << 30, 1, 0);
      return one(at::stack(a.list(0, 1), a.i(0)));
    case PFL_OP_NARROW: a.name = "narrow"; a.need(1, 1, 3, 0);
      return one(a.t(0).narrow(a.i(0), a.i(1), a.i(2)));
    case PFL_OP_SLICE: a.name = "slice"; a.need(1, 1, 4, 0);
      return one(a.t(0).slice(a.i(0), a.i(1), a.i(2), a.i(3)));
    case PFL_OP_SELECT: a.name = "select"; a.need(1, 1, 2, 0);
      return one(a.t(0).select(a.i(0), a.i(1)));
    case PFL_OP_INDEX_SELECT: a.name = "index_select"; a.need(2, 2, 1, 0);
      return one(at::index_select(a.t(0), a.i(0), a.t(1)));
    case PFL_OP_GATHER: a.name = "gather"; a.need(2, 2, 1, 0);
      return one(at::gather(a.t(0), a.i(0), a.t(1)));
    case PFL_OP_SCATTER_ADD: a.name = "scatter_add"; a.need(3, 3, 1, 0);
      return one(at::scatter_add(a.t(0), a.i(0), a.t(1), a.t(2)));
    case PFL_OP_SPLIT: {
      a.name = "split"; a.need(1, 1, 2, 0);
      auto parts = a.t(0).split_with_sizes(a.ints_from(1), a.i(0));
      return std::vector<at::Tensor>(parts.begin(), parts.end());
    }
    case PFL_OP_FLATTEN: a.name = "flatten"; a.need(1, 1, 2, 0);
      return one(a.t(0).flatten(a.i(0), a.i(1)));
    case PFL_OP_REPEAT: a.name = "repeat"; a.need(1, 1, 0, 0);
      return one(a.t(0).repeat(a.ints_from(0)));

    // elementwise
    // alpha == 1 goes as an integer Scalar: integral tensors reject a floating alpha.
    case PFL_OP_ADD: a.name = "add"; a.need(2, 2, 0, 1);
      return one(a.d(0) == 1 ? at::add(a.t(0), a.t(1)) : at::add(a.t(0), a.t(1), a.d(0)));
    case PFL_OP_SUB: a.name = "sub"; a.need(2, 2, 0, 1);
      return one(a.d(0) == 1 ? at::sub(a.t(0), a.t(1)) : at::sub(a.t(0), a.t(1), a.d(0)));
    case PFL_OP_MUL: a.name = "mul"; a.need(2, 2, 0, 0); return one(at::mul(a.t(0), a.t(1)));
    case PFL_OP_DIV: a.name = "div"; a.need(2, 2, 0, 0); return one(at::div(a.t(0), a.t(1)));
    case PFL_OP_ADD_SCALAR: a.name = "add_scalar"; a.need(1, 1, 0, 1);
      return one(at::add(a.t(0), a.d(0)));
    case PFL_OP_MUL_SCALAR: a.name = "mul_scalar"; a.need(1, 1, 0, 1);
      return one(at::mul(a.t(0), a.d(0)));
    case PFL_OP_DIV_SCALAR: a.name = "div_scalar"; a.need(1, 1, 0, 1);
      return one(at::div(a.t(0), a.d(0)));
    case PFL_OP_POW_SCALAR: a.name = "pow"; a.need(1, 1, 0, 1); return one(at::pow(a.t(0), a.d(0)));
    case PFL_OP_NEG: a.name = "neg"; a.need(1, 1, 0, 0); return one(at::neg(a.t(0)));
    case PFL_OP_EXP: a.name = "exp"; a.need(1, 1, 0, 0); return one(at::exp(a.t(0)));
    case PFL_OP_LOG: a.name = "log"; a.need(1, 1, 0, 0); return one(at::log(a.t(0)));
    case PFL_OP_ABS: a.name = "abs"; a.need(1, 1, 0, 0); return one(at::abs(a.t(0)));
    case PFL_OP_SQRT: a.name = "sqrt"; a.need(1, 1, 0, 0); return one(at::sqrt(a.t(0)));
    case PFL_OP_CLAMP: {
      a.name = "clamp"; a.need(1, 1, 2, 2);
      c10::optional<at::Scalar> lo, hi;
      if (a.i(0)) lo = a.d(0);
      if (a.i(1)) hi = a.d(1);
      return one(at::clamp(a.t(0), lo, hi));
    }
    case PFL_OP_WHERE: a.name = "where"; a.need(3, 3, 0, 0);
      return one(at::where(a.t(0), a.t(1), a.t(2)));
    case PFL_OP_EQ: a.name = "eq"; a.need(2, 2, 0, 0); return one(at::eq(a.t(0), a.t(1)));
    case PFL_OP_LT: a.name = "lt"; a.need(2, 2, 0, 0); return one(at::lt(a.t(0), a.t(1)));
    case PFL_OP_GT: a.name = "gt"; a.need(2, 2, 0, 0); return one(at::gt(a.t(0), a.t(1)));
    case PFL_OP_MASKED_FILL: a.name = "masked_fill"; a.need(2, 2, 0, 1);
      return one(a.t(0).masked_fill(a.t(1), a.d(0)));

    // linear algebra
    case PFL_OP_MATMUL: a.name = "matmul"; a.need(2, 2, 0, 0); return one(at::matmul(a.t(0), a.t(1)));
    case PFL_OP_BMM: a.name = "bmm"; a.need(2, 2, 0, 0); return one(at::bmm(a.t(0), a.t(1)));
    case PFL_OP_BADDBMM: a.name = "baddbmm"; a.need(3, 3, 0, 2);
      return one(at::baddbmm(a.t(0), a.t(1), a.t(2), a.d(0), a.d(1)));
    case PFL_OP_LINEAR: a.name = "linear"; a.need(2, 3, 0, 0);
      return one(at::linear(a.t(0), a.t(1), a.opt(2)));
    case PFL_OP_CDIST: a.name = "cdist"; a.need(2, 2, 0, 1);
      return one(at::cdist(a.t(0), a.t(1), a.d(0)));

    // neural-network functions
    case PFL_OP_CONV2D: a.name = "conv2d"; a.need(2, 3, 7, 0);
      return one(at::conv2d(a.t(0), a.t(1), a.opt(2), {a.i(0), a.i(1)}, {a.i(2), a.i(3)},
                            {a.i(4), a.i(5)}, a.i(6)));
    case PFL_OP_MAX_POOL2D: a.name = "max_pool2d"; a.need(1, 1, 6, 0);
      return one(at::max_pool2d(a.t(0), {a.i(0), a.i(1)}, {a.i(2), a.i(3)}, {a.i(4), a.i(5)}));
    case PFL_OP_AVG_POOL2D: a.name = "avg_pool2d"; a.need(1, 1, 6, 0);
      return one(at::avg_pool2d(a.t(0), {a.i(0), a.i(1)}, {a.i(2), a.i(3)}, {a.i(4), a.i(5)}));
    case PFL_OP_ADAPTIVE_AVG_POOL2D: a.name = "adaptive_avg_pool2d"; a.need(1, 1, 2, 0);
      return one(at::adaptive_avg_pool2d(a.t(0), {a.i(0), a.i(1)}));
    case PFL_OP_LAYER_NORM: {
      a.name = "layer_norm"; a.need(1, 3, 1, 1);
      const at::Tensor &x = a.t(0);
      int64_t n = a.i(0);
      if (n < 1 || n > x.dim()) throw ArgError("layer_norm: bad number of normalized dims");
      std::vector<int64_t> shape(x.sizes().end() - n, x.sizes().end());
      at::Tensor y = at::layer_norm(x, shape, {}, {}, a.d(0));
      at::Tensor w = a.opt(1), b = a.opt(2);
      if (w.defined()) y = y * w;
      if (b.defined()) y = y + b;
      return one(y);
    }
    case PFL_OP_BATCH_NORM: a.name = "batch_norm"; a.need(1, 5, 1, 2);
      return one(at::batch_norm(a.t(0), a.opt(1), a.opt(2), a.opt(3), a.opt(4), a.i(0) != 0,
                                a.d(0), a.d(1), false));
    case PFL_OP_SOFTMAX: a.name = "softmax"; a.need(1, 1, 1, 0); return one(at::softmax(a.t(0), a.i(0)));
    case PFL_OP_LOG_SOFTMAX: a.name = "log_softmax"; a.need(1, 1, 1, 0);
      return one(at::log_softmax(a.t(0), a.i(0)));
    case PFL_OP_GELU: a.name = "gelu"; a.need(1, 1, 1, 0);
      return one(at::gelu(a.t(0), a.i(0) ? "tanh" : "none"));
    case PFL_OP_RELU: a.name = "relu"; a.need(1, 1, 0, 0); return one(at::relu(a.t(0)));
    case PFL_OP_TANH: a.name = "tanh"; a.need(1, 1, 0, 0); return one(at::tanh(a.t(0)));
    case PFL_OP_SIGMOID: a.name = "sigmoid"; a.need(1, 1, 0, 0); return one(at::sigmoid(a.t(0)));
    case PFL_OP_DROPOUT: {
      a.name = "dropout"; a.need(1, 1, 1, 1);
      double p = a.d(0);
      if (p < 0 || p >= 1) throw ArgError("dropout: p must be in [0, 1)");
      if (!a.i(0) || p == 0) return one(a.t(0));
      // An explicit Bernoulli mask from our generator, not at::dropout's global one.
      at::Tensor keep = at::empty_like(a.t(0)).bernoulli_(1 - p, gen);
      return one(a.t(0) * keep / (1 - p));
    }
    case PFL_OP_CROSS_ENTROPY: {
      a.name = "cross_entropy"; a.need(2, 3, 1, 1);
      const at::Tensor &logits = a.t(0), &target = a.t(1);
      at::Tensor w = a.opt(2);
      // Per-sample loss first (label smoothing as in torch), then our own weighted reduction.
      at::Tensor l = at::cross_entropy_loss(logits, target, {}, at::Reduction::None, -100,
                                            a.d(0));
      switch (a.i(0)) {
        case 0: return one(w.defined() ? l * w : l);
        case 1: return one(w.defined() ? (l * w).sum() / w.sum() : l.mean());
        case 2: return one(w.defined() ? (l * w).sum() : l.sum());
      }
      throw ArgError("cross_entropy: reduction must be 0 (none), 1 (mean) or 2 (sum)");
    }
    case PFL_OP_EMBEDDING: a.name = "embedding"; a.need(2, 2, 0, 0);
      return one(at::embedding(a.t(0), a.t(1)));
    case PFL_OP_SDPA: {
      a.name = "sdpa"; a.need(3, 4, 2, 2);
      const at::Tensor &q = a.t(0), &k = a.t(1), &v = a.t(2);
      at::Tensor mask = a.opt(3);
      bool causal = a.i(0) != 0;
      double p = a.d(0);
      double scale = a.i(1) ? a.d(1) : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
#if PFL_HAS_SDPA
      if (p == 0) {
        c10::optional<double> sc;
        if (a.i(1)) sc = a.d(1);
        // An undefined tensor inside the optional would be read as a mask: pass nullopt.
        c10::optional<at::Tensor> m;
        if (mask.defined()) m = mask;
        return one(at::scaled_dot_product_attention(q, k, v, m, 0.0, causal, sc));
      }
#endif
      return one(attention_math(q, k, v, mask, causal, scale, p, gen));
    }

    // reductions
    case PFL_OP_SUM: {
      a.name = "sum"; a.need(1, 1, 1, 0);
      auto dims = a.ints_from(1);
      if (dims.empty()) return one(a.t(0).sum());
      return one(a.t(0).sum(dims, a.i(0) != 0));
    }
    case PFL_OP_MEAN: {
      a.name = "mean"; a.need(1, 1, 1, 0);
      auto dims = a.ints_from(1);
      if (dims.empty()) return one(a.t(0).mean());
      return one(a.t(0).mean(dims, a.i(0) != 0));
    }
    case PFL_OP_AMAX: {
      a.name = "amax"; a.need(1, 1, 1, 0);
      auto dims = a.ints_from(1);
      return one(at::amax(a.t(0), dims, a.i(0) != 0));
    }
    case PFL_OP_ARGMAX: a.name = "argmax"; a.need(1, 1, 2, 0);
      return one(at::argmax(a.t(0), a.i(0), a.i(1) != 0));
    case PFL_OP_TOPK: {
      a.name = "topk"; a.need(1, 1, 4, 0);
      auto r = at::topk(a.t(0), a.i(0), a.i(1), a.i(2) != 0, a.i(3) != 0);
      return {std::get<0>(r), std::get<1>(r)};
    }

    // multi-tensor updates, always without autograd
    case PFL_OP_FOREACH_ADD_: {
      a.name = "foreach_add_"; a.need(0, 1 << 30, 0, 1);
      at::NoGradGuard ng;
      at::_foreach_add_(a.list(0, 2), a.list(1, 2), a.d(0));
      return {};
    }
    case PFL_OP_FOREACH_ADD_SCALAR_: {
      a.name = "foreach_add_scalar_"; a.need(0, 1 << 30, 0, 1);
      at::NoGradGuard ng;
      at::_foreach_add_(a.list(0, 1), at::Scalar(a.d(0)));
      return {};
    }
    case PFL_OP_FOREACH_MUL_SCALAR_: {
      a.name = "foreach_mul_scalar_"; a.need(0, 1 << 30, 0, 1);
      at::NoGradGuard ng;
      at::_foreach_mul_(a.list(0, 1), at::Scalar(a.d(0)));
      return {};
    }
    case PFL_OP_FOREACH_MUL_: {
      a.name = "foreach_mul_"; a.need(0, 1 << 30, 0, 0);
      at::NoGradGuard ng;
      at::_foreach_mul_(a.list(0, 2), a.list(1, 2));
      return {};
    }
    case PFL_OP_FOREACH_ADDCMUL_: {
      a.name = "foreach_addcmul_"; a.need(0, 1 << 30, 0, 1);
      at::NoGradGuard ng;
      at::_foreach_addcmul_(a.list(0, 3), a.list(1, 3), a.list(2, 3), a.d(0));
      return {};
    }
    case PFL_OP_FOREACH_ADDCDIV_: {
      a.name = "foreach_addcdiv_"; a.need(0, 1 << 30, 0, 1);
      at::NoGradGuard ng;
      at::_foreach_addcdiv_(a.list(0, 3), a.list(1, 3), a.list(2, 3), a.d(0));
      return {};
    }
    case PFL_OP_FOREACH_ZERO_: {
      a.name = "foreach_zero_"; a.need(0, 1 << 30, 0, 0);
      at::NoGradGuard ng;
      at::_foreach_zero_(a.list(0, 1));
      return {};
    }
    case PFL_OP_FOREACH_COPY_: {
      a.name = "foreach_copy_"; a.need(0, 1 << 30, 0, 0);
      at::NoGradGuard ng;
      auto dst = a.list(0, 2), src = a.list(1, 2);
      // _foreach_copy_ only exists from torch 2.1; a loop is the same result.
      for (size_t j = 0; j < dst.size(); ++j) dst[j].copy_(src[j]);
      return {};
    }
    case PFL_OP_FOREACH_SQRT: {
      a.name = "foreach_sqrt"; a.need(0, 1 << 30, 0, 0);
      at::NoGradGuard ng;
      auto r = at::_foreach_sqrt(a.list(0, 1));
      return std::vector<at::Tensor>(r.begin(), r.end());
    }
    case PFL_OP_FOREACH_LERP_: {
      a.name = "foreach_lerp_"; a.need(0, 1 << 30, 0, 1);
      at::NoGradGuard ng;
      auto x = a.list(0, 2), y = a.list(1, 2);
      // x += w*(y - x), as two multi-tensor kernels (_foreach_lerp_ needs torch >= 2.0).
      auto diff = at::_foreach_sub(y, x);
      at::_foreach_add_(x, diff, a.d(0));
      return {};
    }
    case PFL_OP_FOREACH_WEIGHTED_SUM_: {
      a.name = "foreach_weighted_sum_"; a.need(3, 1 << 30, 0, 0);
      if (a.in.size() % 2 != 1) throw ArgError("foreach_weighted_sum_: want n targets, n sources and the weights");
      at::NoGradGuard ng;
      const size_t n = (a.in.size() - 1) / 2;
      const at::Tensor &w = a.in.back();
      if (!w.defined() || w.dim() != 1) throw ArgError("foreach_weighted_sum_: the weights must be one vector [K]");
      const int64_t k = w.size(0);
      at::Tensor wk;  // the weights as a [1, K] row in the sources' dtype
      for (size_t j = 0; j < n; ++j) {
        at::Tensor dst = a.in[j], src = a.in[n + j];
        if (!dst.defined() || !src.defined()) throw ArgError("foreach_weighted_sum_: null tensor in list");
        if (src.dim() < 1 || src.size(0) != k || dst.numel() * k != src.numel())
          throw ArgError("foreach_weighted_sum_: source " + std::to_string(j) + " " + shape_str(src) +
                         " is not [" + std::to_string(k) + "] + the target's " + shape_str(dst));
        if (!wk.defined() || wk.scalar_type() != src.scalar_type()) wk = w.to(src.scalar_type()).view({1, k});
        // one matrix-vector product per parameter: [1, K] x [K, P]
        at::Tensor sum = at::mm(wk, src.reshape({k, -1}));
        dst.copy_(sum.view(dst.sizes()));
      }
      return {};
    }
    case PFL_OP_KERNEL_IMAGE_BATCH:
      return kernel_image_batch(a.in, a.ints, a.n_ints);
    case PFL_OP_KERNEL_WEIGHTED_SUM_:
      kernel_weighted_sum(a.in);
      return {};
    case PFL_OP_INDEX_COPY_: {
      a.name = "index_copy_"; a.need(3, 3, 1, 0);
      at::NoGradGuard ng;
      at::Tensor dst = a.t(0);
      dst.index_copy_(a.i(0), a.t(1), a.t(2));
      return {};
    }
  }
  throw ArgError("unknown op code " + std::to_string(op));
}

}  // namespace pfl
