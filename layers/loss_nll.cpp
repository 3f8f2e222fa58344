// NLLLoss: -logp[r, target[r]] per row, reduced; backward puts -scale at each target.
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/loss.hpp"
#include "loss_shared.hpp"

namespace cohort::nn {

Tensor NLLLoss::forward_impl(const Tensor& input, const Tensor& target) {
  detail::check_class_targets(name(), input, target, "log-probabilities");
  Device& d = input.device();
  Tensor rows = Tensor::empty(Shape{input.dim(0)}, DType::f32, d);
  ops::nll_forward(input, target, rows);
  target_ = target;
  input_shape_ = input.shape();
  device_ = &d;
  return detail::reduce_rows(rows, reduce_scale(input.dim(0)));
}

Tensor NLLLoss::backward_impl(float scale) {
  Tensor dx = Tensor::empty(input_shape_, DType::f32, *device_);
  ops::nll_backward(target_, scale * reduce_scale(input_shape_[0]), dx);
  target_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
