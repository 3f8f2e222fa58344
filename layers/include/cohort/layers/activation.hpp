// Element-wise activations: ReLU, LeakyReLU, GELU (exact), Sigmoid, Tanh, as their torch.nn
// namesakes. One class, ActivationLayer, does the work; the named classes only pick the function.
#pragma once

#include "cohort/core/op_options.hpp"
#include "cohort/core/parameter.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

class Sequential;

class ActivationLayer : public Module {
 public:
  Activation function() const { return function_; }
  float alpha() const { return alpha_; }

 protected:
  ActivationLayer(std::string type, Activation f, float alpha)
      : Module(std::move(type)), function_(f), alpha_(alpha) {}
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override { return input; }
  void release_saved() override {
    x_ = y_ = Tensor();
    bias_target_ = nullptr;
  }

 private:
  // The Sequential fusion (sequential.hpp) is the only caller: internal coordination, not API.
  friend class Sequential;
  // Fusion with a preceding layer (see Conv2d::fuse_activation_once): records `y`, already
  // f(pre-activation), as this layer's forward output, as forward would have. Only for functions
  // whose backward reads just the output (relu, sigmoid, tanh): fusable().
  Tensor adopt_fused_output(const Tensor& y);
  bool fusable() const;
  // Fusion with a following Dropout (see Dropout::fuse_activation_once): the next forward returns
  // its input unchanged and its backward the gradient unchanged; the dropout does the work.
  void pass_through_once(bool on = true) { passing_ = on; }
  // Fusion with a preceding Linear's bias: the next backward also adds the bias gradient
  // (ops::bias_act_backward) to `bias`, whose layer is then told not to (Linear).
  void fuse_bias_grad_once(Parameter* bias) { bias_target_ = bias; }

  Activation function_;
  float alpha_;
  Tensor x_, y_;  // the last forward's input (when the backward reads it) and output
  bool adopting_ = false;  // inside adopt_fused_output: forward records its input as the output
  bool passing_ = false;   // the next forward passes through (pass_through_once)
  bool passed_ = false;    // the last forward passed through: so does its backward
  Parameter* bias_target_ = nullptr;  // fuse_bias_grad_once, for the next backward
};

class ReLU : public ActivationLayer {
 public:
  ReLU() : ActivationLayer("ReLU", Activation::relu, 0.0f) {}
};
class LeakyReLU : public ActivationLayer {
 public:
  explicit LeakyReLU(float negative_slope = 0.01f)
      : ActivationLayer("LeakyReLU", Activation::leaky_relu, negative_slope) {}
};
class GELU : public ActivationLayer {  // approximate='none' (erf)
 public:
  GELU() : ActivationLayer("GELU", Activation::gelu, 0.0f) {}
};
class Sigmoid : public ActivationLayer {
 public:
  Sigmoid() : ActivationLayer("Sigmoid", Activation::sigmoid, 0.0f) {}
};
class Tanh : public ActivationLayer {
 public:
  Tanh() : ActivationLayer("Tanh", Activation::tanh, 0.0f) {}
};

}  // namespace cohort::nn
