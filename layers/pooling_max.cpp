// MaxPool2d: forward keeps, per output, the index of the winning input element (i32) so backward
// scatters each gradient to exactly the element PyTorch would (first maximum; NaN wins).
#include "cohort/layers/pooling.hpp"

namespace cohort::nn {

Shape MaxPool2d::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 4, "expected 4-D input [N, C, H, W], got ", input);
  const std::int64_t eh = (params_.kh - 1) * params_.dil_h + 1,
                     ew = (params_.kw - 1) * params_.dil_w + 1;
  COHORT_MODULE_CHECK(params_.pad_h <= eh / 2 && params_.pad_w <= ew / 2, "padding (",
                      params_.pad_h, ", ", params_.pad_w,
                      ") must be at most half the (dilated) kernel size (", eh, ", ", ew, ")");
  COHORT_MODULE_CHECK(
      conv_out_size(input[2], params_.kh, params_.stride_h, params_.pad_h, params_.dil_h) >= 1 &&
          conv_out_size(input[3], params_.kw, params_.stride_w, params_.pad_w, params_.dil_w) >= 1,
      "input ", input, " is smaller than the pooling window ", eh, "x", ew, " (padding ",
      params_.pad_h, ", ", params_.pad_w, ")");
  return ops::pool2d_output_shape(input, params_);
}

Tensor MaxPool2d::forward_impl(const Tensor& x) {
  const Shape ys = output_shape_impl(x.shape());
  Tensor y = Tensor::empty(ys, DType::f32, x.device());
  argmax_ = Tensor::empty(ys, DType::i32, x.device());
  ops::pool2d_forward(x, y, &argmax_, params_);
  x_shape_ = x.shape();
  return y;
}

Tensor MaxPool2d::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Tensor dx;
  if (need_input_grad) {
    dx = Tensor::empty(x_shape_, DType::f32, grad_output.device());
    ops::pool2d_backward(grad_output, &argmax_, dx, params_);
  }
  argmax_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
