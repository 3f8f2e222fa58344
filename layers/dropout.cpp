// Dropout: the mask is regenerated in backward from (seed, step) rather than stored, so a
// training step keeps no mask tensor alive and forward/backward agree by construction. Under a
// Sequential's fusion the activation before it runs in the same pass (dropout.hpp).
#include "cohort/layers/dropout.hpp"

#include "cohort/core/layer_ops.hpp"
#include "cohort/layers/init.hpp"

namespace cohort::nn {

Dropout::Dropout(float p) : Module("Dropout"), drop_prob_(p), seed_(next_seed()) {
  COHORT_MODULE_CHECK(p >= 0.0f && p <= 1.0f, "p must be a probability in [0, 1], got ", p);
}

Tensor Dropout::forward_impl(const Tensor& x) {
  fused_ = fusing_;
  fused_alpha_ = fusing_alpha_;
  fusing_ = Activation::identity;
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()),
                      " (shape ", x.shape(), ")");
  applied_ = would_apply();
  COHORT_MODULE_CHECK(applied_ || fused_ == Activation::identity,
                      "an activation was fused into a dropout that drops nothing");
  x_ = fused_ == Activation::identity ? Tensor() : x;
  if (!applied_) return x;  // identity: the same tensor, as PyTorch returns
  applied_step_ = step_++;
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  ops::dropout_forward(DropoutArgs{drop_prob_, seed_, applied_step_}, x, y, fused_, fused_alpha_);
  return y;
}

Tensor Dropout::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  const Tensor x = x_;
  x_ = Tensor();
  if (!need_input_grad) return Tensor();
  if (!applied_) return grad_output;
  Tensor dx = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
  ops::dropout_backward(DropoutArgs{drop_prob_, seed_, applied_step_}, grad_output, dx, fused_,
                        fused_alpha_, fused_ == Activation::identity ? nullptr : &x);
  return dx;
}

}  // namespace cohort::nn
