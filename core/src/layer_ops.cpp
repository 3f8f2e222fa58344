// Argument checks for the layer ops, then one call of the op table through dispatch::run (the
// tensors' device, or the host when that device does not support the case).
#include "cohort/core/layer_ops.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "cohort/core/device.hpp"
#include "cohort/backend/dispatch.hpp"
#include "cohort/core/error.hpp"

namespace cohort {

const char* activation_name(Activation f) {
  switch (f) {
    case Activation::identity: return "identity";
    case Activation::relu: return "relu";
    case Activation::leaky_relu: return "leaky_relu";
    case Activation::gelu: return "gelu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::tanh: return "tanh";
  }
  return "?";
}

namespace ops {
namespace {

using i64 = std::int64_t;

void req_defined(const char* op, const char* arg, const Tensor& t) {
  COHORT_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor");
}

void req_dtype(const char* op, const char* arg, const Tensor& t, DType dt) {
  req_defined(op, arg, t);
  COHORT_CHECK(t.dtype() == dt, op, ": argument '", arg, "' must be ", dtype_name(dt), ", got ",
               dtype_name(t.dtype()), " (shape ", t.shape().str(), ")");
}

void req_f32(const char* op, const char* arg, const Tensor& t) { req_dtype(op, arg, t, DType::f32); }

void req_same_device(const char* op, const Tensor& a, const char* an, const Tensor& b,
                     const char* bn) {
  COHORT_CHECK(&a.device() == &b.device(), op, ": '", an, "' is on ", a.device().name(),
               " but '", bn, "' is on ", b.device().name());
}

void req_shape(const char* op, const char* arg, const Tensor& t, const Shape& want) {
  COHORT_CHECK(t.shape() == want, op, ": '", arg, "' is ", t.shape().str(), ", expected ",
               want.str());
}

// f32, the expected shape, and on the same device as `ref`.
void req_like(const char* op, const char* arg, const Tensor& t, const Shape& want,
              const Tensor& ref, const char* ref_name) {
  req_f32(op, arg, t);
  req_shape(op, arg, t, want);
  req_same_device(op, ref, ref_name, t, arg);
}

int norm_axis(const char* op, int axis, const Tensor& t) {
  const int rank = static_cast<int>(t.rank());
  COHORT_CHECK(axis >= -rank && axis < rank, op, ": axis ", axis, " is out of range for a ",
               rank, "-D tensor ", t.shape().str());
  return axis < 0 ? axis + rank : axis;
}

// The tensor as [outer, channels, inner] around `axis`.
ChannelDims dims_around(const Shape& s, int axis) {
  ChannelDims d;
  for (int i = 0; i < axis; ++i) d.outer *= s[i];
  d.channels = s[axis];
  for (int i = axis + 1; i < static_cast<int>(s.rank()); ++i) d.inner *= s[i];
  return d;
}

Conv2dArgs conv_args(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const Shape y = conv2d_output_shape(x, w, p);
  Conv2dArgs a;
  a.n = x[0];
  a.c = x[1];
  a.h = x[2];
  a.w = x[3];
  a.k = w[0];
  a.r = w[2];
  a.s = w[3];
  a.stride_h = p.stride_h;
  a.stride_w = p.stride_w;
  a.pad_h = p.pad_h;
  a.pad_w = p.pad_w;
  a.dil_h = p.dil_h;
  a.dil_w = p.dil_w;
  a.groups = p.groups;
  a.oh = y[2];
  a.ow = y[3];
  return a;
}

Pool2dArgs pool_args(const Shape& x, const Pool2dParams& p) {
  const Shape y = pool2d_output_shape(x, p);
  Pool2dArgs a;
  a.kind = p.kind;
  a.n = x[0];
  a.c = x[1];
  a.h = x[2];
  a.w = x[3];
  a.kh = p.kh;
  a.kw = p.kw;
  a.stride_h = p.stride_h;
  a.stride_w = p.stride_w;
  a.pad_h = p.pad_h;
  a.pad_w = p.pad_w;
  a.dil_h = p.kind == PoolKind::max ? p.dil_h : 1;
  a.dil_w = p.kind == PoolKind::max ? p.dil_w : 1;
  a.count_include_pad = p.count_include_pad;
  a.oh = y[2];
  a.ow = y[3];
  return a;
}

// Targets: i64 [rows], each in [0, classes). The values are checked only where the host can read
// them in place: reading a GPU's targets back would stop the device at every loss. There the
// DataLoader has checked them on the host before the upload, and the kernels turn an index out of
// range into a NaN loss (and NaN gradient row) instead of reading outside the row.
void check_targets(const char* op, const Tensor& target, i64 rows, i64 classes) {
  req_dtype(op, "target", target, DType::i64);
  COHORT_CHECK(target.rank() == 1 && target.dim(0) == rows, op, ": target is ",
               target.shape().str(), ", expected [", rows, "] (one class index per row)");
  if (!target.device().host_accessible()) return;
  const std::vector<std::int64_t> t = target.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < t.size(); ++i)
    COHORT_CHECK(t[i] >= 0 && t[i] < classes, op, ": target[", i, "] = ", t[i],
                 " is not a class index in [0, ", classes, ")");
}

std::size_t count(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

}  // namespace

// ---- convolution ----

Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const char* op = "conv2d";
  COHORT_CHECK(x.rank() == 4, op, ": expected 4-D input [N, C, H, W], got ", x.str());
  COHORT_CHECK(w.rank() == 4, op, ": expected 4-D weight [K, C / groups, R, S], got ", w.str());
  COHORT_CHECK(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1 &&
                   p.pad_h >= 0 && p.pad_w >= 0 && p.groups >= 1,
               op, ": stride (", p.stride_h, ", ", p.stride_w, ") and dilation (", p.dil_h, ", ",
               p.dil_w, ") must be >= 1, padding (", p.pad_h, ", ", p.pad_w,
               ") >= 0 and groups (", p.groups, ") >= 1");
  COHORT_CHECK(x[1] % p.groups == 0 && w[0] % p.groups == 0, op, ": groups = ", p.groups,
               " must divide the input channels (", x[1], ") and the output channels (", w[0],
               ")");
  COHORT_CHECK(w[1] * p.groups == x[1], op, ": weight ", w.str(), " expects ", w[1] * p.groups,
               " input channels (", w[1], " per group x ", p.groups, " groups), input is ",
               x.str());
  COHORT_CHECK(w[2] >= 1 && w[3] >= 1, op, ": empty kernel in weight ", w.str());
  const i64 oh = conv_out_size(x[2], w[2], p.stride_h, p.pad_h, p.dil_h);
  const i64 ow = conv_out_size(x[3], w[3], p.stride_w, p.pad_w, p.dil_w);
  COHORT_CHECK(oh >= 1 && ow >= 1, op, ": input ", x.str(), " with padding (", p.pad_h, ", ",
               p.pad_w, ") is smaller than the kernel ", w[2], "x", w[3], " dilated by (",
               p.dil_h, ", ", p.dil_w, ")");
  return Shape{x[0], w[0], oh, ow};
}

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                    const Conv2dParams& p, Activation act, float act_alpha) {
  const char* op = "conv2d_forward";
  req_f32(op, "x", x);
  req_f32(op, "weight", w);
  Conv2dArgs a = conv_args(x.shape(), w.shape(), p);
  a.act = act;
  a.act_alpha = act_alpha;
  req_same_device(op, x, "x", w, "weight");
  if (bias) req_like(op, "bias", *bias, Shape{a.k}, x, "x");
  req_like(op, "y", y, Shape{a.n, a.k, a.oh, a.ow}, x, "x");
  if (a.n == 0 || a.k == 0) return;
  dispatch::run(x.device(), {&x, &w, bias}, {&y}, [&](const dispatch::Operands& o) {
    return calls::Conv2dForward{a, o.in<float>(x), o.in<float>(w), o.in<float>(bias),
                                o.out<float>(y)};
  });
}

void conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  const char* op = "conv2d_backward_data";
  req_f32(op, "dx", dx);
  req_f32(op, "weight", w);
  req_f32(op, "dy", dy);
  const Conv2dArgs a = conv_args(dx.shape(), w.shape(), p);
  req_like(op, "dy", dy, Shape{a.n, a.k, a.oh, a.ow}, dx, "dx");
  req_same_device(op, dx, "dx", w, "weight");
  if (a.n == 0 || a.c == 0) return;
  dispatch::run(dx.device(), {&dy, &w}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::Conv2dBackwardData{a, o.in<float>(dy), o.in<float>(w), o.out<float>(dx)};
  });
}

void conv2d_backward_filter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                            const Conv2dParams& p) {
  const char* op = "conv2d_backward_filter";
  req_f32(op, "x", x);
  req_f32(op, "dweight", dw);
  const Conv2dArgs a = conv_args(x.shape(), dw.shape(), p);
  req_like(op, "dy", dy, Shape{a.n, a.k, a.oh, a.ow}, x, "x");
  req_same_device(op, x, "x", dw, "dweight");
  if (dbias) req_like(op, "dbias", *dbias, Shape{a.k}, x, "x");
  if (a.n == 0 || a.k == 0) return;
  dispatch::run(x.device(), {&x, &dy}, {&dw, dbias}, [&](const dispatch::Operands& o) {
    return calls::Conv2dBackwardFilter{a, o.in<float>(x), o.in<float>(dy), o.out<float>(dw),
                                       o.out<float>(dbias)};
  });
}

// ---- pooling ----

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p) {
  const char* op = p.kind == PoolKind::max ? "max_pool2d" : "avg_pool2d";
  COHORT_CHECK(x.rank() == 4, op, ": expected 4-D input [N, C, H, W], got ", x.str());
  const bool is_max = p.kind == PoolKind::max;
  const i64 dh = is_max ? p.dil_h : 1, dw = is_max ? p.dil_w : 1;
  COHORT_CHECK(p.kh >= 1 && p.kw >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && dh >= 1 &&
                   dw >= 1 && p.pad_h >= 0 && p.pad_w >= 0,
               op, ": kernel (", p.kh, ", ", p.kw, "), stride (", p.stride_h, ", ", p.stride_w,
               ") and dilation (", dh, ", ", dw, ") must be >= 1 and padding (", p.pad_h, ", ",
               p.pad_w, ") >= 0");
  // PyTorch's rule: every window must hold at least one input element.
  const i64 eff_h = (p.kh - 1) * dh + 1, eff_w = (p.kw - 1) * dw + 1;
  COHORT_CHECK(p.pad_h <= (is_max ? eff_h : p.kh) / 2 && p.pad_w <= (is_max ? eff_w : p.kw) / 2,
               op, ": padding (", p.pad_h, ", ", p.pad_w,
               ") must be at most half the kernel size (", p.kh, ", ", p.kw, ")");
  const i64 oh = conv_out_size(x[2], p.kh, p.stride_h, p.pad_h, dh);
  const i64 ow = conv_out_size(x[3], p.kw, p.stride_w, p.pad_w, dw);
  COHORT_CHECK(oh >= 1 && ow >= 1, op, ": input ", x.str(), " is smaller than the window ",
               p.kh, "x", p.kw, " (padding ", p.pad_h, ", ", p.pad_w, ")");
  return Shape{x[0], x[1], oh, ow};
}

void pool2d_forward(const Tensor& x, Tensor& y, Tensor* argmax, const Pool2dParams& p) {
  const char* op = "pool2d_forward";
  req_f32(op, "x", x);
  const Pool2dArgs a = pool_args(x.shape(), p);
  const Shape ys{a.n, a.c, a.oh, a.ow};
  req_like(op, "y", y, ys, x, "x");
  if (argmax) {
    COHORT_CHECK(p.kind == PoolKind::max, op, ": argmax is only produced by max pooling");
    req_dtype(op, "argmax", *argmax, DType::i32);
    req_shape(op, "argmax", *argmax, ys);
    req_same_device(op, x, "x", *argmax, "argmax");
    COHORT_CHECK(a.h * a.w <= INT32_MAX, op, ": input planes of ", a.h * a.w,
                 " elements exceed the i32 argmax");
  }
  if (y.numel() == 0) return;
  dispatch::run(x.device(), {&x}, {&y, argmax}, [&](const dispatch::Operands& o) {
    return calls::Pool2dForward{a, o.in<float>(x), o.out<float>(y), o.out<std::int32_t>(argmax)};
  });
}

void pool2d_backward(const Tensor& dy, const Tensor* argmax, Tensor& dx, const Pool2dParams& p) {
  const char* op = "pool2d_backward";
  req_f32(op, "dx", dx);
  const Pool2dArgs a = pool_args(dx.shape(), p);
  const Shape ys{a.n, a.c, a.oh, a.ow};
  req_like(op, "dy", dy, ys, dx, "dx");
  if (p.kind == PoolKind::max) {
    COHORT_CHECK(argmax != nullptr, op, ": max pooling needs the argmax of its forward");
    req_dtype(op, "argmax", *argmax, DType::i32);
    req_shape(op, "argmax", *argmax, ys);
    req_same_device(op, dx, "dx", *argmax, "argmax");
  }
  if (dx.numel() == 0) return;
  dispatch::run(dx.device(), {&dy, argmax}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::Pool2dBackward{a, o.in<float>(dy), o.in<std::int32_t>(argmax),
                                 o.out<float>(dx)};
  });
}

// ---- activations and bias ----

void activation_forward(Activation f, float alpha, const Tensor& x, Tensor& y) {
  const char* op = "activation_forward";
  req_f32(op, "x", x);
  req_like(op, "y", y, x.shape(), x, "x");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::ActivationForward{f, alpha, o.in<float>(x), o.out<float>(y), count(x)};
  });
}

void activation_backward(Activation f, float alpha, const Tensor& x, const Tensor& y,
                         const Tensor& dy, Tensor& dx) {
  const char* op = "activation_backward";
  req_f32(op, "dy", dy);
  req_like(op, "x", x, dy.shape(), dy, "dy");
  req_like(op, "y", y, dy.shape(), dy, "dy");
  req_like(op, "dx", dx, dy.shape(), dy, "dy");
  if (count(dy) == 0) return;
  dispatch::run(dy.device(), {&x, &y, &dy}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::ActivationBackward{f,          alpha,           o.in<float>(x), o.in<float>(y),
                                     o.in<float>(dy), o.out<float>(dx), count(dy)};
  });
}

void bias_add(const Tensor& bias, Tensor& y, int axis, Activation act, float act_alpha) {
  const char* op = "bias_add";
  req_f32(op, "y", y);
  const ChannelDims d = dims_around(y.shape(), norm_axis(op, axis, y));
  req_like(op, "bias", bias, Shape{d.channels}, y, "y");
  if (count(y) == 0) return;
  dispatch::run(y.device(), {&bias}, {&y}, [&](const dispatch::Operands& o) {
    return calls::BiasAdd{d, o.in<float>(bias), o.out<float>(y), act, act_alpha};
  });
}

void bias_grad(const Tensor& dy, Tensor& dbias, int axis) {
  const char* op = "bias_grad";
  req_f32(op, "dy", dy);
  const ChannelDims d = dims_around(dy.shape(), norm_axis(op, axis, dy));
  req_like(op, "dbias", dbias, Shape{d.channels}, dy, "dy");
  if (d.channels == 0) return;
  dispatch::run(dy.device(), {&dy}, {&dbias}, [&](const dispatch::Operands& o) {
    return calls::BiasGrad{d, o.in<float>(dy), o.out<float>(dbias)};
  });
}

// ---- softmax ----

void softmax_forward(bool log, const Tensor& x, Tensor& y, int dim) {
  const char* op = log ? "log_softmax_forward" : "softmax_forward";
  req_f32(op, "x", x);
  const ChannelDims d = dims_around(x.shape(), norm_axis(op, dim, x));
  req_like(op, "y", y, x.shape(), x, "x");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::SoftmaxForward{log, d, o.in<float>(x), o.out<float>(y)};
  });
}

void softmax_backward(bool log, const Tensor& y, const Tensor& dy, Tensor& dx, int dim) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  req_f32(op, "y", y);
  const ChannelDims d = dims_around(y.shape(), norm_axis(op, dim, y));
  req_like(op, "dy", dy, y.shape(), y, "y");
  req_like(op, "dx", dx, y.shape(), y, "y");
  if (count(y) == 0) return;
  dispatch::run(y.device(), {&y, &dy}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::SoftmaxBackward{log, d, o.in<float>(y), o.in<float>(dy), o.out<float>(dx)};
  });
}

// ---- batch norm ----

namespace {
BatchNormArgs bn_args(const char* op, const Tensor& x, float eps, float momentum, bool training) {
  req_f32(op, "x", x);
  COHORT_CHECK(x.rank() >= 2, op, ": expected input [N, C, ...], got ", x.shape().str());
  const ChannelDims d = dims_around(x.shape(), 1);
  BatchNormArgs a;
  a.n = d.outer;
  a.c = d.channels;
  a.inner = d.inner;
  a.eps = eps;
  a.momentum = momentum;
  a.training = training;
  COHORT_CHECK(!training || a.n * a.inner > 1, op,
               ": training needs more than 1 value per channel, input is ", x.shape().str());
  return a;
}
}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta,
                        Tensor* running_mean, Tensor* running_var, Tensor& y, Tensor& save_mean,
                        Tensor& save_invstd, float eps, float momentum, bool training) {
  const char* op = "batch_norm_forward";
  const BatchNormArgs a = bn_args(op, x, eps, momentum, training);
  const Shape cs{a.c};
  if (gamma) req_like(op, "gamma", *gamma, cs, x, "x");
  if (beta) req_like(op, "beta", *beta, cs, x, "x");
  COHORT_CHECK((running_mean == nullptr) == (running_var == nullptr), op,
               ": running_mean and running_var come together");
  COHORT_CHECK(training || running_mean, op, ": evaluation needs running statistics");
  if (running_mean) {
    req_like(op, "running_mean", *running_mean, cs, x, "x");
    req_like(op, "running_var", *running_var, cs, x, "x");
  }
  req_like(op, "y", y, x.shape(), x, "x");
  req_like(op, "save_mean", save_mean, cs, x, "x");
  req_like(op, "save_invstd", save_invstd, cs, x, "x");
  if (a.c == 0 || (count(x) == 0 && !training)) return;
  COHORT_CHECK(count(x) > 0, op, ": empty input ", x.shape().str());
  dispatch::run(x.device(), {&x, gamma, beta}, {running_mean, running_var, &y, &save_mean,
                                                &save_invstd},
                [&](const dispatch::Operands& o) {
                  return calls::BatchNormForward{
                      a, o.in<float>(x), o.in<float>(gamma), o.in<float>(beta),
                      o.out<float>(running_mean), o.out<float>(running_var), o.out<float>(y),
                      o.out<float>(save_mean), o.out<float>(save_invstd)};
                });
}

void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor* gamma,
                         const Tensor& save_mean, const Tensor& save_invstd, Tensor* dx,
                         Tensor* dgamma, Tensor* dbeta, bool training) {
  const char* op = "batch_norm_backward";
  const BatchNormArgs a = bn_args(op, x, 0.0f, 0.0f, training);
  const Shape cs{a.c};
  req_like(op, "dy", dy, x.shape(), x, "x");
  if (gamma) req_like(op, "gamma", *gamma, cs, x, "x");
  req_like(op, "save_mean", save_mean, cs, x, "x");
  req_like(op, "save_invstd", save_invstd, cs, x, "x");
  if (dx) req_like(op, "dx", *dx, x.shape(), x, "x");
  if (dgamma) req_like(op, "dgamma", *dgamma, cs, x, "x");
  if (dbeta) req_like(op, "dbeta", *dbeta, cs, x, "x");
  if (a.c == 0 || count(x) == 0) return;
  dispatch::run(x.device(), {&x, &dy, gamma, &save_mean, &save_invstd}, {dx, dgamma, dbeta},
                [&](const dispatch::Operands& o) {
                  return calls::BatchNormBackward{
                      a, o.in<float>(x), o.in<float>(dy), o.in<float>(gamma),
                      o.in<float>(save_mean), o.in<float>(save_invstd), o.out<float>(dx),
                      o.out<float>(dgamma), o.out<float>(dbeta)};
                });
}

// ---- layer norm ----

namespace {
LayerNormArgs ln_args(const char* op, const Tensor& x, i64 normalized, float eps) {
  req_f32(op, "x", x);
  COHORT_CHECK(normalized >= 1 && x.numel() % normalized == 0, op, ": cannot normalise groups of ",
               normalized, " elements of x ", x.shape().str());
  LayerNormArgs a;
  a.cols = normalized;
  a.rows = x.numel() / normalized;
  a.eps = eps;
  return a;
}
}  // namespace

void layer_norm_forward(const Tensor& x, i64 normalized, const Tensor* gamma, const Tensor* beta,
                        Tensor& y, Tensor& save_mean, Tensor& save_rstd, float eps) {
  const char* op = "layer_norm_forward";
  const LayerNormArgs a = ln_args(op, x, normalized, eps);
  if (gamma) req_like(op, "gamma", *gamma, Shape{a.cols}, x, "x");
  if (beta) req_like(op, "beta", *beta, Shape{a.cols}, x, "x");
  req_like(op, "y", y, x.shape(), x, "x");
  req_like(op, "save_mean", save_mean, Shape{a.rows}, x, "x");
  req_like(op, "save_rstd", save_rstd, Shape{a.rows}, x, "x");
  if (a.rows == 0) return;
  dispatch::run(x.device(), {&x, gamma, beta}, {&y, &save_mean, &save_rstd},
                [&](const dispatch::Operands& o) {
                  return calls::LayerNormForward{a,
                                                 o.in<float>(x),
                                                 o.in<float>(gamma),
                                                 o.in<float>(beta),
                                                 o.out<float>(y),
                                                 o.out<float>(save_mean),
                                                 o.out<float>(save_rstd)};
                });
}

void layer_norm_backward(const Tensor& x, const Tensor& dy, i64 normalized, const Tensor* gamma,
                         const Tensor& save_mean, const Tensor& save_rstd, Tensor* dx,
                         Tensor* dgamma, Tensor* dbeta) {
  const char* op = "layer_norm_backward";
  const LayerNormArgs a = ln_args(op, x, normalized, 0.0f);
  req_like(op, "dy", dy, x.shape(), x, "x");
  if (gamma) req_like(op, "gamma", *gamma, Shape{a.cols}, x, "x");
  req_like(op, "save_mean", save_mean, Shape{a.rows}, x, "x");
  req_like(op, "save_rstd", save_rstd, Shape{a.rows}, x, "x");
  if (dx) req_like(op, "dx", *dx, x.shape(), x, "x");
  if (dgamma) req_like(op, "dgamma", *dgamma, Shape{a.cols}, x, "x");
  if (dbeta) req_like(op, "dbeta", *dbeta, Shape{a.cols}, x, "x");
  if (a.rows == 0) return;
  dispatch::run(x.device(), {&x, &dy, gamma, &save_mean, &save_rstd}, {dx, dgamma, dbeta},
                [&](const dispatch::Operands& o) {
                  return calls::LayerNormBackward{
                      a, o.in<float>(x), o.in<float>(dy), o.in<float>(gamma),
                      o.in<float>(save_mean), o.in<float>(save_rstd), o.out<float>(dx),
                      o.out<float>(dgamma), o.out<float>(dbeta)};
                });
}

// ---- dropout ----

void dropout_forward(const DropoutArgs& a, const Tensor& x, Tensor& y) {
  const char* op = "dropout_forward";
  COHORT_CHECK(a.p >= 0.0f && a.p <= 1.0f, op, ": p = ", a.p, " is not a probability");
  req_f32(op, "x", x);
  req_like(op, "y", y, x.shape(), x, "x");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::DropoutForward{a, o.in<float>(x), o.out<float>(y), count(x)};
  });
}

void dropout_backward(const DropoutArgs& a, const Tensor& dy, Tensor& dx) {
  const char* op = "dropout_backward";
  COHORT_CHECK(a.p >= 0.0f && a.p <= 1.0f, op, ": p = ", a.p, " is not a probability");
  req_f32(op, "dy", dy);
  req_like(op, "dx", dx, dy.shape(), dy, "dy");
  if (count(dy) == 0) return;
  dispatch::run(dy.device(), {&dy}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::DropoutBackward{a, o.in<float>(dy), o.out<float>(dx), count(dy)};
  });
}

// ---- class-index losses ----

namespace {
void req_rows(const char* op, const char* arg, const Tensor& t) {
  req_f32(op, arg, t);
  COHORT_CHECK(t.rank() == 2, op, ": expected '", arg, "' [N, C], got ", t.shape().str());
}
}  // namespace

void nll_forward(const Tensor& logp, const Tensor& target, Tensor& loss) {
  const char* op = "nll_forward";
  req_rows(op, "logp", logp);
  check_targets(op, target, logp.dim(0), logp.dim(1));
  req_same_device(op, logp, "logp", target, "target");
  req_like(op, "loss", loss, Shape{logp.dim(0)}, logp, "logp");
  if (logp.dim(0) == 0) return;
  dispatch::run(logp.device(), {&logp, &target}, {&loss}, [&](const dispatch::Operands& o) {
    return calls::NllForward{o.in<float>(logp), o.in<std::int64_t>(target),
                             static_cast<std::size_t>(logp.dim(0)),
                             static_cast<std::size_t>(logp.dim(1)), o.out<float>(loss)};
  });
}

void nll_backward(const Tensor& target, float scale, Tensor& dx) {
  const char* op = "nll_backward";
  req_rows(op, "dx", dx);
  check_targets(op, target, dx.dim(0), dx.dim(1));
  req_same_device(op, dx, "dx", target, "target");
  if (dx.dim(0) == 0) return;
  dispatch::run(dx.device(), {&target}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::NllBackward{o.in<std::int64_t>(target), static_cast<std::size_t>(dx.dim(0)),
                              static_cast<std::size_t>(dx.dim(1)), scale, o.out<float>(dx)};
  });
}

void cross_entropy_backward(const Tensor& logp, const Tensor& target, float scale, Tensor& dx) {
  const char* op = "cross_entropy_backward";
  req_rows(op, "logp", logp);
  check_targets(op, target, logp.dim(0), logp.dim(1));
  req_same_device(op, logp, "logp", target, "target");
  req_like(op, "dx", dx, logp.shape(), logp, "logp");
  if (logp.dim(0) == 0) return;
  dispatch::run(logp.device(), {&logp, &target}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::CrossEntropyBackward{o.in<float>(logp), o.in<std::int64_t>(target),
                                       static_cast<std::size_t>(logp.dim(0)),
                                       static_cast<std::size_t>(logp.dim(1)), scale,
                                       o.out<float>(dx)};
  });
}

// ---- data movement ----

namespace {
// Two tensors whose memory ranges overlap (the same storage, or views of it) cannot be the input
// and output of a copy whose items read and write in different orders.
void req_disjoint(const char* op, const Tensor& a, const char* an, const Tensor& b,
                  const char* bn) {
  const auto* pa = static_cast<const char*>(a.raw());
  const auto* pb = static_cast<const char*>(b.raw());
  COHORT_CHECK(pa + a.nbytes() <= pb || pb + b.nbytes() <= pa || a.nbytes() == 0 ||
                   b.nbytes() == 0,
               op, ": '", an, "' ", a.shape().str(), " and '", bn, "' ", b.shape().str(),
               " overlap in memory");
}

std::string perm_str(const std::vector<int>& perm) {
  std::string s = "(";
  for (std::size_t i = 0; i < perm.size(); ++i) s += (i ? ", " : "") + std::to_string(perm[i]);
  return s + ")";
}

// perm with negative entries resolved; throws unless it is a permutation of 0..rank-1.
std::vector<int> checked_perm(const char* op, const std::vector<int>& perm, const Shape& s) {
  const int rank = static_cast<int>(s.rank());
  COHORT_CHECK(static_cast<int>(perm.size()) == rank, op, ": permutation ", perm_str(perm),
               " has ", perm.size(), " entries for the ", rank, "-D tensor ", s.str());
  std::vector<int> p(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (std::size_t a = 0; a < perm.size(); ++a) {
    const int v = perm[a] < 0 ? perm[a] + rank : perm[a];
    COHORT_CHECK(v >= 0 && v < rank && !seen[static_cast<std::size_t>(v)], op, ": ",
                 perm_str(perm), " is not a permutation of the axes of ", s.str());
    seen[static_cast<std::size_t>(v)] = true;
    p[a] = v;
  }
  return p;
}

// The smallest equivalent permutation: extent-1 axes dropped, output neighbours that are input
// neighbours in the same order merged into one axis.
PermuteArgs simplify_permutation(const char* op, const Shape& s, const std::vector<int>& p) {
  const int rank = static_cast<int>(s.rank());
  // Output axes that carry data, as input axes.
  std::vector<int> out_axes;
  for (int ax : p)
    if (s[ax] != 1) out_axes.push_back(ax);
  // Runs of output axes whose input axes are consecutive: each run is one merged axis, holding
  // the input axes [first, last] (no extent-1 axis lies between: those were dropped, and a run
  // over a dropped axis is still contiguous in memory, so it may span it).
  struct Run {
    int first, last;
  };
  std::vector<Run> runs;
  for (int ax : out_axes) {
    if (!runs.empty()) {
      int next = runs.back().last + 1;
      while (next < rank && s[next] == 1) ++next;  // skip dropped axes
      if (next == ax) {
        runs.back().last = ax;
        continue;
      }
    }
    runs.push_back({ax, ax});
  }
  PermuteArgs a;
  if (runs.empty()) return a;  // a single element (or every extent 1): rank 1, dims {1}
  COHORT_CHECK(static_cast<int>(runs.size()) <= PermuteArgs::max_rank, op, ": permuting ",
               s.str(), " by ", perm_str(p), " needs ", runs.size(),
               " axes after merging neighbours, at most ", PermuteArgs::max_rank,
               " are supported");
  // Merged input axes in input order; the permutation maps output run r to its input rank.
  std::vector<int> order(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) order[r] = static_cast<int>(r);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    return runs[static_cast<std::size_t>(x)].first < runs[static_cast<std::size_t>(y)].first;
  });
  a.rank = static_cast<int>(runs.size());
  for (int k = 0; k < a.rank; ++k) {
    const Run& run = runs[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])];
    i64 extent = 1;
    for (int ax = run.first; ax <= run.last; ++ax) extent *= s[ax];
    a.dims[k] = extent;
    a.perm[order[static_cast<std::size_t>(k)]] = k;
  }
  return a;
}
}  // namespace

std::vector<int> inverse_permutation(const std::vector<int>& perm) {
  const int rank = static_cast<int>(perm.size());
  std::vector<int> q(perm.size(), -1);
  int a = 0;
  for (int v : perm) {
    if (v < 0) v += rank;
    COHORT_CHECK(v >= 0 && v < rank && q[static_cast<std::size_t>(v)] < 0,
                 "inverse_permutation: ", perm_str(perm), " is not a permutation");
    q[static_cast<std::size_t>(v)] = a++;
  }
  return q;
}

void permute(const Tensor& x, const std::vector<int>& perm, Tensor& out) {
  const char* op = "permute";
  req_f32(op, "x", x);
  const std::vector<int> p = checked_perm(op, perm, x.shape());
  std::vector<i64> dims;
  for (int ax : p) dims.push_back(x.dim(ax));
  req_like(op, "out", out, Shape(dims), x, "x");
  if (x.numel() == 0) return;
  req_disjoint(op, x, "x", out, "out");
  const PermuteArgs a = simplify_permutation(op, x.shape(), p);
  dispatch::run(x.device(), {&x}, {&out}, [&](const dispatch::Operands& o) {
    return calls::Permute{a, o.in<float>(x), o.out<float>(out)};
  });
}

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  req_f32("permute", "x", x);
  const std::vector<int> p = checked_perm("permute", perm, x.shape());
  std::vector<i64> dims;
  for (int ax : p) dims.push_back(x.dim(ax));
  Tensor out = Tensor::empty(Shape(dims), DType::f32, x.device());
  permute(x, p, out);
  return out;
}

void slice_copy(const Tensor& src, i64 src_start, Tensor& dst, i64 dst_start, i64 length,
                int axis, bool accumulate) {
  const char* op = "slice_copy";
  req_f32(op, "src", src);
  req_f32(op, "dst", dst);
  req_same_device(op, src, "src", dst, "dst");
  COHORT_CHECK(src.rank() == dst.rank() && src.rank() >= 1, op, ": src ", src.shape().str(),
               " and dst ", dst.shape().str(), " must have the same rank (>= 1)");
  const int ax = norm_axis(op, axis, dst);
  bool after_same = true, before_same = true, before_ones = true;
  for (int i = 0; i < static_cast<int>(dst.rank()); ++i) {
    if (i > ax && src.dim(i) != dst.dim(i)) after_same = false;
    if (i < ax && src.dim(i) != dst.dim(i)) before_same = false;
    if (i < ax && src.dim(i) != 1) before_ones = false;
  }
  COHORT_CHECK(after_same && (before_same || before_ones), op, ": src ", src.shape().str(),
               " and dst ", dst.shape().str(), " differ on an axis other than ", ax,
               " (src may differ only by being 1 on every axis before it, to be broadcast)");
  COHORT_CHECK(length >= 0 && src_start >= 0 && src_start + length <= src.dim(ax) &&
                   dst_start >= 0 && dst_start + length <= dst.dim(ax),
               op, ": rows [", src_start, ", ", src_start + length, ") of src ", src.shape().str(),
               " to rows [", dst_start, ", ", dst_start + length, ") of dst ", dst.shape().str(),
               " along axis ", ax, " are out of range");
  const ChannelDims d = dims_around(dst.shape(), ax);  // [outer, rows, inner]
  SliceCopyArgs a;
  a.outer = d.outer;
  a.inner = d.inner;
  a.length = length;
  a.src_len = src.dim(ax);
  a.src_start = src_start;
  a.dst_len = d.channels;
  a.dst_start = dst_start;
  a.src_broadcast = !before_same;
  a.accumulate = accumulate;
  if (a.outer * a.length * a.inner == 0) return;
  req_disjoint(op, src, "src", dst, "dst");
  dispatch::run(dst.device(), {&src}, {&dst}, [&](const dispatch::Operands& o) {
    return calls::SliceCopy{a, o.in<float>(src), o.out<float>(dst)};
  });
}

Tensor narrow(const Tensor& x, int axis, i64 start, i64 length) {
  req_f32("narrow", "x", x);
  const int ax = norm_axis("narrow", axis, x);
  COHORT_CHECK(length >= 0 && start >= 0 && start + length <= x.dim(ax), "narrow: rows [", start,
               ", ", start + length, ") along axis ", ax, " are out of range for ",
               x.shape().str());
  std::vector<i64> dims = x.shape().dims();
  dims[static_cast<std::size_t>(ax)] = length;
  Tensor out = Tensor::empty(Shape(dims), DType::f32, x.device());
  slice_copy(x, start, out, 0, length, ax);
  return out;
}

Tensor cat(const std::vector<Tensor>& xs, int axis) {
  COHORT_CHECK(!xs.empty(), "cat: no tensors");
  for (const Tensor& x : xs) req_f32("cat", "xs[i]", x);
  const int ax = norm_axis("cat", axis, xs[0]);
  std::vector<i64> dims = xs[0].shape().dims();
  i64 total = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    bool fits = xs[k].rank() == xs[0].rank();
    for (int i = 0; fits && i < static_cast<int>(xs[0].rank()); ++i)
      fits = i == ax || xs[k].dim(i) == xs[0].dim(i);
    COHORT_CHECK(fits, "cat: xs[", k, "] is ", xs[k].shape().str(), ", xs[0] is ",
                 xs[0].shape().str(), "; they may differ only along axis ", ax);
    req_same_device("cat", xs[0], "xs[0]", xs[k], "xs[i]");
    total += xs[k].dim(ax);
  }
  dims[static_cast<std::size_t>(ax)] = total;
  Tensor out = Tensor::empty(Shape(dims), DType::f32, xs[0].device());
  i64 at = 0;
  for (const Tensor& x : xs) {
    slice_copy(x, 0, out, at, x.dim(ax), ax);
    at += x.dim(ax);
  }
  return out;
}

}  // namespace ops
}  // namespace cohort
