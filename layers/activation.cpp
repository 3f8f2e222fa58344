// ReLU, LeakyReLU, GELU, Sigmoid, Tanh: one element-wise op each way. The backward reads the
// forward's output for relu/sigmoid/tanh and its input for leaky_relu/gelu, so only that tensor
// is kept. Under a Sequential's fusion the layer may also add a Linear's bias gradient in its
// backward pass, or pass through while a Dropout applies it (activation.hpp).
#include "cohort/layers/activation.hpp"

#include "cohort/core/layer_ops.hpp"

namespace cohort::nn {
namespace {
bool reads_input(Activation f) { return f == Activation::leaky_relu || f == Activation::gelu; }
}  // namespace

bool ActivationLayer::fusable() const { return !reads_input(function_); }

Tensor ActivationLayer::forward_impl(const Tensor& x) {
  passed_ = passing_;
  passing_ = false;
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()),
                      " (shape ", x.shape(), ")");
  if (passed_) {  // a fused Dropout after this layer applies f (pass_through_once)
    x_ = y_ = Tensor();
    return x;
  }
  if (adopting_) {  // x already is f(pre-activation), computed by the fused producer
    x_ = Tensor();
    y_ = x;
    return x;
  }
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  ops::activation_forward(function_, alpha_, x, y);
  x_ = reads_input(function_) ? x : Tensor();
  y_ = reads_input(function_) ? Tensor() : y;
  return y;
}

Tensor ActivationLayer::adopt_fused_output(const Tensor& y) {
  COHORT_MODULE_CHECK(fusable(), "cannot adopt a fused output: its backward needs the input");
  // Route through Module::forward so the forward/backward bookkeeping is the same as unfused.
  adopting_ = true;
  try {
    Tensor out = forward(y);
    adopting_ = false;
    return out;
  } catch (...) {
    adopting_ = false;
    throw;
  }
}

Tensor ActivationLayer::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Parameter* const bias = bias_target_;
  bias_target_ = nullptr;
  if (passed_) return need_input_grad ? grad_output : Tensor();
  Tensor dx;
  const Tensor& saved = reads_input(function_) ? x_ : y_;
  if (bias) {  // the preceding Linear's bias gradient in the same pass (fuse_bias_grad_once)
    dx = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
    ops::bias_act_backward(function_, alpha_, saved, saved, grad_output, dx, ensure_grad(*bias),
                            -1);
  } else if (need_input_grad) {
    dx = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
    ops::activation_backward(function_, alpha_, saved, saved, grad_output, dx);
  }
  x_ = Tensor();
  y_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
