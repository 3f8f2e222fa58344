// MSELoss: built from the core element-wise ops (no op of its own): d = input - target,
// loss = reduce(d * d), grad = 2 scale d.
#include <cmath>

#include "cohort/core/ops.hpp"
#include "cohort/layers/loss.hpp"
#include "loss_shared.hpp"

namespace cohort::nn {

Tensor MSELoss::forward_impl(const Tensor& input, const Tensor& target) {
  COHORT_CHECK(target.dtype() == DType::f32 && target.shape() == input.shape(), name(),
               ": input ", input.shape(), " and target ", target.shape(), " ",
               dtype_name(target.dtype()), " must have the same shape (f32)");
  Device& d = input.device();
  diff_ = Tensor::empty(input.shape(), DType::f32, d);
  ops::sub(input, target, diff_);
  Tensor sq = Tensor::empty(input.shape(), DType::f32, d);
  ops::mul(diff_, diff_, sq);
  if (input.numel() == 0) {
    Tensor loss = Tensor::empty(Shape{}, DType::f32, d);
    ops::fill(loss, reduction() == Reduction::mean ? NAN : 0.0);  // torch: mean of nothing is nan
    return loss;
  }
  return detail::reduce_rows(sq, reduce_scale(input.numel()));
}

Tensor MSELoss::backward_impl(float scale) {
  Tensor dx = Tensor::empty(diff_.shape(), DType::f32, diff_.device());
  ops::scale(2.0f * scale * reduce_scale(diff_.numel()), diff_, dx);
  diff_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
