// Convolution front ends (conv2d_forward, backward data, backward filter): argument checks that
// name the tensor at fault, then one call of the op table (backends/common/ops/conv2d.hpp).
#include "cohort/core/layer_ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/autocast.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {

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
  a.compute = autocast_dtype(x.device());
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
  Conv2dArgs a = conv_args(dx.shape(), w.shape(), p);
  a.compute = autocast_dtype(dx.device());
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
  Conv2dArgs a = conv_args(x.shape(), dw.shape(), p);
  a.compute = autocast_dtype(x.device());
  req_like(op, "dy", dy, Shape{a.n, a.k, a.oh, a.ow}, x, "x");
  req_same_device(op, x, "x", dw, "dweight");
  if (dbias) req_like(op, "dbias", *dbias, Shape{a.k}, x, "x");
  if (a.n == 0 || a.k == 0) return;
  dispatch::run(x.device(), {&x, &dy}, {&dw, dbias}, [&](const dispatch::Operands& o) {
    return calls::Conv2dBackwardFilter{a, o.in<float>(x), o.in<float>(dy), o.out<float>(dw),
                                       o.out<float>(dbias)};
  });
}

}  // namespace cohort::ops
