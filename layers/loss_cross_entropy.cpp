// CrossEntropyLoss, fused: log-softmax of the logits (max-subtracted, so any logits are stable),
// NLL per row, one reduction; backward is scale * (softmax - onehot) in one pass from the saved
// log-probabilities. Label smoothing adds the rows' sums of -logp (one reduction) to the NLL rows.
#include "cohort/core/device.hpp"
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
  if (target.dtype() == DType::f32) return forward_soft(input, target);
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

// Probabilities as targets (torch's cross_entropy with a float target): t' = t (1 - ls) + ls / C,
// per row -sum_c t'[c] logp[c]. Composed of the generic ops: a log-softmax, one product, one
// row sum.
Tensor CrossEntropyLoss::forward_soft(const Tensor& input, const Tensor& target) {
  COHORT_CHECK(input.shape().rank() == 2 && target.shape() == input.shape(), name(),
               ": soft targets (f32) must have the logits' shape [N, C], got ", target.shape().str(),
               " for logits ", input.shape().str(), " (class indices are i64 [N])");
  COHORT_CHECK(&target.device() == &input.device(), name(), ": targets on ",
               target.device().name(), ", logits on ", input.device().name());
  Device& d = input.device();
  const std::int64_t n = input.dim(0), c = input.dim(1);
  input_ = input;
  logp_ = Tensor::empty(input.shape(), DType::f32, d);
  ops::softmax_forward(true, input, logp_, 1);
  soft_ = Tensor::empty(input.shape(), DType::f32, d);
  if (label_smoothing_ > 0) {
    const auto ls = static_cast<float>(label_smoothing_);
    ops::fill(soft_, ls / static_cast<float>(c));
    ops::axpy(1.0f - ls, target, soft_);
  } else {
    ops::scale(1.0f, target, soft_);
  }
  Tensor terms = Tensor::empty(input.shape(), DType::f32, d);
  ops::mul(soft_, logp_, terms);
  Tensor rows = Tensor::empty(Shape{n}, DType::f32, d);
  ops::reduce_sum(terms, rows);
  return detail::reduce_rows(rows, -reduce_scale(n));
}

Tensor CrossEntropyLoss::backward_impl(float scale) {
  if (soft_.defined()) return backward_soft(scale);
  Tensor dx = Tensor::empty(logp_.shape(), DType::f32, logp_.device());
  ops::cross_entropy_backward(logp_, target_, scale * reduce_scale(logp_.dim(0)), dx,
                              static_cast<float>(label_smoothing_));
  logp_ = Tensor();
  target_ = Tensor();
  return dx;
}

// d loss / d z = scale * (softmax(z) * sum_c t'[c] - t'), torch's gradient for float targets
// (their rows need not sum to 1). The row sums reach every column through a [N, 1] x [1, C]
// product, so that no op needs broadcasting.
Tensor CrossEntropyLoss::backward_soft(float scale) {
  Device& d = logp_.device();
  const std::int64_t n = logp_.dim(0), c = logp_.dim(1);
  Tensor p = Tensor::empty(logp_.shape(), DType::f32, d);
  ops::softmax_forward(false, input_, p, 1);
  Tensor sums = Tensor::empty(Shape{n, 1}, DType::f32, d);
  ops::reduce_sum(soft_, sums);
  Tensor ones = Tensor::empty(Shape{1, c}, DType::f32, d);
  ops::fill(ones, 1.0f);
  Tensor spread = ops::matmul(sums, ones);  // [N, C]: row r holds sum_c t'[r, c]
  Tensor dx = Tensor::empty(logp_.shape(), DType::f32, d);
  ops::mul(p, spread, dx);
  ops::sub(dx, soft_, dx);
  ops::scale(scale * reduce_scale(n), dx, dx);
  logp_ = Tensor();
  soft_ = Tensor();
  input_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
