// Linear: one GEMM forward (x W^T, bias added in a second pass over the small output, with the
// next activation in it under a Sequential's fusion), three products backward: dbias = column
// sums of dy (or already added by the fused activation's backward), dW += dy^T x, dx = dy W.
#include "cohort/core/device.hpp"
#include "cohort/layers/linear.hpp"

#include <cmath>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/init.hpp"

namespace cohort::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Device& device, bool bias)
    : Module("Linear"), in_features_(in_features), out_features_(out_features) {
  COHORT_MODULE_CHECK(in_features_ >= 1 && out_features_ >= 1, "in_features (", in_features_,
                      ") and out_features (", out_features_, ") must be positive");
  weight_ = register_parameter("weight", kaiming_uniform(Shape{out_features_, in_features_},
                                                         std::sqrt(5.0), in_features_, device));
  if (bias) {
    const float b = 1.0f / std::sqrt(static_cast<float>(in_features_));
    bias_ = register_parameter("bias", init_uniform(Shape{out_features_}, -b, b, device));
  }
}

Shape Linear::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() >= 1 && input[-1] == in_features_, "expected input [*, ",
                      in_features_, "], got ", input);
  std::vector<std::int64_t> d = input.dims();
  d.back() = out_features_;
  return Shape(d);
}

Tensor Linear::forward_impl(const Tensor& x) {
  const Shape ys = output_shape_impl(x.shape());
  COHORT_MODULE_CHECK(&x.device() == &weight_->value.device(), "input is on ", x.device().name(),
                      ", parameters are on ", weight_->value.device().name());
  const Activation act = fused_;
  fused_ = Activation::identity;
  COHORT_MODULE_CHECK(act == Activation::identity || bias_,
                      "a fused activation needs the bias pass, and this layer has no bias");
  x_ = x.reshape({-1, in_features_});
  Tensor y = Tensor::empty(Shape{x_.dim(0), out_features_}, DType::f32, x.device());
  ops::gemm(x_, false, weight_->value, true, y);
  if (bias_) ops::bias_add(bias_->value, y, -1, act);
  return y.reshape(ys);
}

Tensor Linear::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  const Tensor g = grad_output.reshape({-1, out_features_});
  const bool bias_done = bias_grad_done_;
  bias_grad_done_ = false;
  if (bias_ && bias_->requires_grad) {
    if (!bias_done) ops::bias_grad(g, bias_->grad, -1);
    grad_ready(bias_);
  }
  if (weight_->requires_grad) {
    ops::gemm(g, true, x_, false, weight_->grad, 1.0f, 1.0f);
    grad_ready(weight_);
  }
  Tensor dx;
  if (need_input_grad) {
    dx = Tensor::empty(x_.shape(), DType::f32, g.device());
    ops::gemm(g, false, weight_->value, false, dx);
    std::vector<std::int64_t> d = grad_output.shape().dims();
    d.back() = in_features_;
    dx = dx.reshape(d);
  }
  x_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
