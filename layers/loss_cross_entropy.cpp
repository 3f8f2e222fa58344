// CrossEntropyLoss, fused: log-softmax of the logits (max-subtracted, so any logits are stable),
// NLL per row, one reduction; backward is scale * (softmax - onehot) in one pass from the saved
// log-probabilities. Label smoothing adds the rows' sums of -logp (one reduction) to the NLL rows.
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/loss.hpp"
#include "loss_shared.hpp"

namespace cohort::nn {

CrossEntropyLoss::CrossEntropyLoss(Reduction r, double label_smoothing)
    : Loss("CrossEntropyLoss", r), label_smoothing_(label_smoothing) {
  COHORT_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
               "CrossEntropyLoss: label_smoothing must be in [0, 1], got ", label_smoothing);
}

Tensor CrossEntropyLoss::forward_impl(const Tensor& input, const Tensor& target) {
  detail::check_class_targets(name(), input, target, "logits");
  Device& d = input.device();
  logp_ = Tensor::empty(input.shape(), DType::f32, d);
  ops::softmax_forward(true, input, logp_, 1);
  Tensor rows = Tensor::empty(Shape{input.dim(0)}, DType::f32, d);
  ops::nll_forward(logp_, target, rows);
  if (label_smoothing_ > 0) {
    const auto ls = static_cast<float>(label_smoothing_);
    Tensor sums = Tensor::empty(Shape{input.dim(0)}, DType::f32, d);
    ops::reduce_sum(logp_, sums);
    ops::scale(1.0f - ls, rows, rows);
    ops::axpy(-ls / static_cast<float>(input.dim(1)), sums, rows);
  }
  target_ = target;
  return detail::reduce_rows(rows, reduce_scale(input.dim(0)));
}

Tensor CrossEntropyLoss::backward_impl(float scale) {
  Tensor dx = Tensor::empty(logp_.shape(), DType::f32, logp_.device());
  ops::cross_entropy_backward(logp_, target_, scale * reduce_scale(logp_.dim(0)), dx,
                              static_cast<float>(label_smoothing_));
  logp_ = Tensor();
  target_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
