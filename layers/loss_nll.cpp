// NLLLoss: -logp[r, target[r]] per row, reduced; backward puts -scale at each target.
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/loss.hpp"

namespace cohort::nn {

Tensor NLLLoss::forward_impl(const Tensor& input, const Tensor& target) {
  COHORT_CHECK(input.rank() == 2, name(), ": expected input [N, C] (log-probabilities), got ",
               input.shape());
  COHORT_CHECK(target.dtype() == DType::i64 && target.rank() == 1 &&
                   target.dim(0) == input.dim(0),
               name(), ": expected target [", input.dim(0), "] of class indices (i64) for input ",
               input.shape(), ", got ", target.shape(), " ", dtype_name(target.dtype()));
  Device& d = input.device();
  Tensor rows = Tensor::empty(Shape{input.dim(0)}, DType::f32, d);
  ops::nll_forward(input, target, rows);
  Tensor loss = Tensor::empty(Shape{}, DType::f32, d);
  ops::sum_last(rows.reshape({1, input.dim(0)}), loss);
  ops::scale(reduce_scale(input.dim(0)), loss, loss);
  target_ = target;
  input_shape_ = input.shape();
  device_ = &d;
  return loss;
}

Tensor NLLLoss::backward_impl(float scale) {
  Tensor dx = Tensor::empty(input_shape_, DType::f32, *device_);
  ops::nll_backward(target_, scale * reduce_scale(input_shape_[0]), dx);
  target_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
