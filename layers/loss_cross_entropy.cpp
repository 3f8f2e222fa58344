// CrossEntropyLoss, fused: log-softmax of the logits (max-subtracted, so any logits are stable),
// NLL per row, one reduction; backward is scale * (softmax - onehot) in one pass from the saved
// log-probabilities.
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/loss.hpp"
#include "loss_shared.hpp"

namespace cohort::nn {

Tensor CrossEntropyLoss::forward_impl(const Tensor& input, const Tensor& target) {
  detail::check_class_targets(name(), input, target, "logits");
  Device& d = input.device();
  logp_ = Tensor::empty(input.shape(), DType::f32, d);
  ops::softmax_forward(true, input, logp_, 1);
  Tensor rows = Tensor::empty(Shape{input.dim(0)}, DType::f32, d);
  ops::nll_forward(logp_, target, rows);
  target_ = target;
  return detail::reduce_rows(rows, reduce_scale(input.dim(0)));
}

Tensor CrossEntropyLoss::backward_impl(float scale) {
  Tensor dx = Tensor::empty(logp_.shape(), DType::f32, logp_.device());
  ops::cross_entropy_backward(logp_, target_, scale * reduce_scale(logp_.dim(0)), dx);
  logp_ = Tensor();
  target_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
