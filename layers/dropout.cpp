// Dropout: the mask is regenerated in backward from (seed, step) rather than stored, so a
// training step keeps no mask tensor alive and forward/backward agree by construction.
#include "cohort/layers/dropout.hpp"

#include "cohort/core/layer_ops.hpp"
#include "cohort/layers/init.hpp"

namespace cohort::nn {

Dropout::Dropout(float p) : Module("Dropout"), drop_prob_(p), seed_(next_seed()) {
  COHORT_MODULE_CHECK(p >= 0.0f && p <= 1.0f, "p must be a probability in [0, 1], got ", p);
}

Tensor Dropout::forward_impl(const Tensor& x) {
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()),
                      " (shape ", x.shape(), ")");
  applied_ = is_training() && drop_prob_ > 0.0f;
  if (!applied_) return x;  // identity: the same tensor, as PyTorch returns
  applied_step_ = step_++;
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  ops::dropout_forward(DropoutArgs{drop_prob_, seed_, applied_step_}, x, y);
  return y;
}

Tensor Dropout::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  if (!need_input_grad) return Tensor();
  if (!applied_) return grad_output;
  Tensor dx = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
  ops::dropout_backward(DropoutArgs{drop_prob_, seed_, applied_step_}, grad_output, dx);
  return dx;
}

}  // namespace cohort::nn
