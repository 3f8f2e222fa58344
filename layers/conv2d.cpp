// Conv2d: the work is the device's conv2d ops (on the host oneDNN's convolution,
// backends/host/conv2d.cpp, or with COHORT_HOST_CONV=im2col the shared im2col + GEMM of
// backends/common/ops/conv2d.hpp; cuDNN on a GPU); this file owns the parameters, the checks that
// name the layer, and the order of the backward products (bias and weight gradients first, so
// their grad-ready hooks fire before the input gradient is computed).
#include "cohort/core/device.hpp"
#include "cohort/layers/conv2d.hpp"

#include <cmath>

#include "cohort/layers/init.hpp"

namespace cohort::nn {

Conv2d::Conv2d(const Conv2dOptions& options, Device& device) : Module("Conv2d"), options_(options) {
  const auto& p = options_.p;
  COHORT_MODULE_CHECK(options_.in_channels >= 1 && options_.out_channels >= 1 &&
                          options_.kernel_h >= 1 && options_.kernel_w >= 1,
                      "channels (", options_.in_channels, " -> ", options_.out_channels,
                      ") and kernel (", options_.kernel_h, "x", options_.kernel_w,
                      ") must be positive");
  COHORT_MODULE_CHECK(p.groups >= 1 && options_.in_channels % p.groups == 0 &&
                          options_.out_channels % p.groups == 0,
                      "groups = ", p.groups, " must divide in_channels (", options_.in_channels,
                      ") and out_channels (", options_.out_channels, ")");
  COHORT_MODULE_CHECK(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1 &&
                          p.pad_h >= 0 && p.pad_w >= 0,
                      "stride (", p.stride_h, ", ", p.stride_w, ") and dilation (", p.dil_h, ", ",
                      p.dil_w, ") must be >= 1, padding (", p.pad_h, ", ", p.pad_w, ") >= 0");
  const std::int64_t cg = options_.in_channels / p.groups;
  const std::int64_t fan_in = cg * options_.kernel_h * options_.kernel_w;
  weight_ = register_parameter(
      "weight",
      kaiming_uniform(Shape{options_.out_channels, cg, options_.kernel_h, options_.kernel_w},
                      std::sqrt(5.0), fan_in, device));
  if (options_.with_bias) {
    const float b = 1.0f / std::sqrt(static_cast<float>(fan_in));
    bias_ = register_parameter("bias", init_uniform(Shape{options_.out_channels}, -b, b, device));
  }
}

Shape Conv2d::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 4 && input[1] == options_.in_channels,
                      "expected 4-D input [N, ", options_.in_channels, ", H, W], got ", input);
  const auto& p = options_.p;
  const std::int64_t oh = conv_out_size(input[2], options_.kernel_h, p.stride_h, p.pad_h, p.dil_h);
  const std::int64_t ow = conv_out_size(input[3], options_.kernel_w, p.stride_w, p.pad_w, p.dil_w);
  COHORT_MODULE_CHECK(oh >= 1 && ow >= 1, "input ", input, " is too small for kernel ",
                      options_.kernel_h, "x", options_.kernel_w, " with padding (", p.pad_h, ", ",
                      p.pad_w, "), dilation (", p.dil_h, ", ", p.dil_w, ")");
  return Shape{input[0], options_.out_channels, oh, ow};
}

Tensor Conv2d::forward_impl(const Tensor& x) {
  const Shape ys = output_shape_impl(x.shape());
  COHORT_MODULE_CHECK(&x.device() == &weight_->value.device(), "input is on ", x.device().name(),
                      ", parameters are on ", weight_->value.device().name());
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()));
  const Activation act = fused_;
  fused_ = Activation::identity;
  Tensor y = Tensor::empty(ys, DType::f32, x.device());
  ops::conv2d_forward(x, weight_->value, bias_ ? &bias_->value : nullptr, y, options_.p, act);
  x_ = x;
  return y;
}

Tensor Conv2d::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  const bool want_b = bias_ && bias_->requires_grad;
  if (weight_->requires_grad) {
    ops::conv2d_backward_filter(x_, grad_output, weight_->grad, want_b ? &bias_->grad : nullptr,
                                options_.p);
  } else if (want_b) {
    ops::bias_grad(grad_output, bias_->grad, 1);
  }
  if (want_b) grad_ready(bias_);
  if (weight_->requires_grad) grad_ready(weight_);
  Tensor dx;
  if (need_input_grad) {
    dx = Tensor::empty(x_.shape(), DType::f32, x_.device());
    ops::conv2d_backward_data(grad_output, weight_->value, dx, options_.p);
  }
  x_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
