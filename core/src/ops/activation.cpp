// Activation and bias front ends (activation_forward/backward, bias_add, bias_grad,
// bias_act_backward): checks, then
// one call of the op table (backends/common/ops/activation.hpp).
#include "cohort/core/layer_ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

}  // namespace cohort::ops

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

}  // namespace cohort

namespace cohort::ops {

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

void bias_act_backward(Activation f, float alpha, const Tensor& x, const Tensor& y,
                       const Tensor& dy, Tensor& dx, Tensor& dbias, int axis) {
  const char* op = "bias_act_backward";
  req_f32(op, "dy", dy);
  req_like(op, "x", x, dy.shape(), dy, "dy");
  req_like(op, "y", y, dy.shape(), dy, "dy");
  req_like(op, "dx", dx, dy.shape(), dy, "dy");
  const ChannelDims d = dims_around(dy.shape(), norm_axis(op, axis, dy));
  req_like(op, "dbias", dbias, Shape{d.channels}, dy, "dy");
  if (count(dy) == 0) return;
  dispatch::run(dy.device(), {&x, &y, &dy}, {&dx, &dbias}, [&](const dispatch::Operands& o) {
    return calls::BiasActBackward{d,
                                  f,
                                  alpha,
                                  o.in<float>(x),
                                  o.in<float>(y),
                                  o.in<float>(dy),
                                  o.out<float>(dx),
                                  o.out<float>(dbias)};
  });
}

}  // namespace cohort::ops
