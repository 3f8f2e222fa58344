// AvgPool2d and AdaptiveAvgPool2d: both are the device's average pooling; the adaptive layer is
// the average pooling whose window and stride are input / output (exact when the output size
// divides the input size, which is the case this layer accepts).
#include "cohort/layers/pooling.hpp"

namespace cohort::nn {

// ---- AvgPool2d ----

Shape AvgPool2d::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 4, "expected 4-D input [N, C, H, W], got ", input);
  COHORT_MODULE_CHECK(params_.pad_h <= params_.kh / 2 && params_.pad_w <= params_.kw / 2,
                      "padding (", params_.pad_h, ", ", params_.pad_w,
                      ") must be at most half the kernel size (", params_.kh, ", ", params_.kw,
                      ")");
  COHORT_MODULE_CHECK(
      conv_out_size(input[2], params_.kh, params_.stride_h, params_.pad_h, 1) >= 1 &&
          conv_out_size(input[3], params_.kw, params_.stride_w, params_.pad_w, 1) >= 1,
      "input ", input, " is smaller than the pooling window ", params_.kh, "x", params_.kw,
      " (padding ", params_.pad_h, ", ", params_.pad_w, ")");
  return ops::pool2d_output_shape(input, params_);
}

Tensor AvgPool2d::forward_impl(const Tensor& x) {
  Tensor y = Tensor::empty(output_shape_impl(x.shape()), DType::f32, x.device());
  ops::pool2d_forward(x, y, nullptr, params_);
  x_shape_ = x.shape();
  return y;
}

Tensor AvgPool2d::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  if (!need_input_grad) return Tensor();
  Tensor dx = Tensor::empty(x_shape_, DType::f32, grad_output.device());
  ops::pool2d_backward(grad_output, nullptr, dx, params_);
  return dx;
}

// ---- AdaptiveAvgPool2d ----

ops::Pool2dParams AdaptiveAvgPool2d::params_for(const Shape& input) const {
  COHORT_MODULE_CHECK(out_h_ >= 1 && out_w_ >= 1, "output size (", out_h_, ", ", out_w_,
                      ") must be positive");
  COHORT_MODULE_CHECK(input.rank() == 4, "expected 4-D input [N, C, H, W], got ", input);
  COHORT_MODULE_CHECK(
      input[2] % out_h_ == 0 && input[3] % out_w_ == 0 && input[2] >= 1 && input[3] >= 1,
      "output size (", out_h_, ", ", out_w_, ") must divide the input's H and W, got ", input);
  ops::Pool2dParams p;
  p.kind = PoolKind::avg;
  p.kh = p.stride_h = input[2] / out_h_;
  p.kw = p.stride_w = input[3] / out_w_;
  return p;
}

Shape AdaptiveAvgPool2d::output_shape_impl(const Shape& input) const {
  params_for(input);
  return Shape{input[0], input[1], out_h_, out_w_};
}

Tensor AdaptiveAvgPool2d::forward_impl(const Tensor& x) {
  const ops::Pool2dParams p = params_for(x.shape());
  Tensor y = Tensor::empty(Shape{x.dim(0), x.dim(1), out_h_, out_w_}, DType::f32, x.device());
  ops::pool2d_forward(x, y, nullptr, p);
  x_shape_ = x.shape();
  return y;
}

Tensor AdaptiveAvgPool2d::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  if (!need_input_grad) return Tensor();
  Tensor dx = Tensor::empty(x_shape_, DType::f32, grad_output.device());
  ops::pool2d_backward(grad_output, nullptr, dx, params_for(x_shape_));
  return dx;
}

}  // namespace cohort::nn
