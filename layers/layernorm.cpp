// LayerNorm: per-row statistics and normalisation forward (saving mean and 1/std per row), dx per
// row and the parameter gradients per column backward. A block may fuse the residual add before
// it and the residual's gradient add after its backward into those passes (layernorm.hpp).
#include "cohort/layers/layernorm.hpp"

#include "cohort/core/layer_ops.hpp"

namespace cohort::nn {

LayerNorm::LayerNorm(std::vector<std::int64_t> normalized_shape, Device& device, float eps,
                     bool elementwise_affine)
    : Module("LayerNorm"), shape_(std::move(normalized_shape)), eps_(eps) {
  COHORT_MODULE_CHECK(!shape_.empty(), "normalized_shape is empty");
  for (std::int64_t d : shape_) {
    COHORT_MODULE_CHECK(d >= 1, "normalized_shape ", Shape(shape_), " has a non-positive extent");
    numel_ *= d;
  }
  if (elementwise_affine) {
    weight_ = register_parameter("weight", Tensor::full(Shape(shape_), 1.0, DType::f32, device));
    bias_ = register_parameter("bias", Tensor::zeros(Shape(shape_), DType::f32, device));
  }
}

Shape LayerNorm::output_shape_impl(const Shape& input) const {
  bool ok = input.rank() >= shape_.size();
  for (std::size_t i = 0; ok && i < shape_.size(); ++i)
    ok = input.dims()[input.rank() - shape_.size() + i] == shape_[i];
  COHORT_MODULE_CHECK(ok, "expected input [*, ", Shape(shape_).str().substr(1), ", got ", input);
  return input;
}

Tensor LayerNorm::forward_impl(const Tensor& x) {
  const Tensor residual = residual_;
  Tensor sum = sum_;
  residual_ = sum_ = Tensor();
  output_shape_impl(x.shape());
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()));
  const std::int64_t rows = x.numel() / numel_;
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  mean_ = Tensor::empty(Shape{rows}, DType::f32, x.device());
  rstd_ = Tensor::empty(Shape{rows}, DType::f32, x.device());
  const Tensor w = weight_ ? weight_->value.reshape({numel_}) : Tensor();
  const Tensor b = bias_ ? bias_->value.reshape({numel_}) : Tensor();
  if (residual.defined()) {  // fuse_residual_once: normalise x + residual, keep the sum
    ops::layer_norm_forward(x, numel_, weight_ ? &w : nullptr, bias_ ? &b : nullptr, y, mean_,
                            rstd_, eps_, &residual, &sum);
    x_ = sum;
  } else {
    ops::layer_norm_forward(x, numel_, weight_ ? &w : nullptr, bias_ ? &b : nullptr, y, mean_,
                            rstd_, eps_);
    x_ = x;
  }
  return y;
}

Tensor LayerNorm::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  const Tensor add = grad_add_;
  grad_add_ = Tensor();
  COHORT_MODULE_CHECK(!add.defined() || need_input_grad,
                      "a fused gradient add needs the input gradient");
  Tensor dx;
  if (need_input_grad) dx = Tensor::empty(x_.shape(), DType::f32, x_.device());
  const bool gw = weight_ && weight_->requires_grad, gb = bias_ && bias_->requires_grad;
  const Tensor w = weight_ ? weight_->value.reshape({numel_}) : Tensor();
  Tensor dw = gw ? weight_->grad.reshape({numel_}) : Tensor();
  Tensor db = gb ? bias_->grad.reshape({numel_}) : Tensor();
  ops::layer_norm_backward(x_, grad_output, numel_, weight_ ? &w : nullptr, mean_, rstd_,
                           need_input_grad ? &dx : nullptr, gw ? &dw : nullptr, gb ? &db : nullptr,
                           add.defined() ? &add : nullptr);
  if (gb) grad_ready(bias_);
  if (gw) grad_ready(weight_);
  x_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
