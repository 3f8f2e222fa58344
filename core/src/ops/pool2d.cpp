// Pooling front ends (pool2d_forward, pool2d_backward): checks, then one call of the op table
// (backends/common/ops/pool2d.hpp).
#include "cohort/core/layer_ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {

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

}  // namespace

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

}  // namespace cohort::ops
