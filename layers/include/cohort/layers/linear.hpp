// Linear: y = x W^T + b over the last dimension, as torch.nn.Linear.
#pragma once

#include "cohort/core/op_options.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

class Linear : public Module {
 public:
  // weight [out, in] and bias [out], both U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default).
  Linear(std::int64_t in_features, std::int64_t out_features, Device& device, bool bias = true);

  const ParameterPtr& weight() const { return weight_; }
  const ParameterPtr& bias() const { return bias_; }  // null without bias
  std::int64_t in_features() const { return in_features_; }
  std::int64_t out_features() const { return out_features_; }

 protected:
  // Input [..., in] (any leading dimensions, flattened into rows), output [..., out].
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { x_ = Tensor(); }

 private:
  // The Sequential fusion (sequential.hpp) is the only caller: internal coordination, not API.
  friend class Sequential;
  // The next forward applies `f` in the bias pass (ops::bias_add's activation); needs a bias.
  void fuse_activation_once(Activation f) { fused_ = f; }
  // The next backward's bias gradient was already added by the activation after this layer
  // (ActivationLayer::fuse_bias_grad_once): it only reports the bias ready.
  void bias_grad_done_once(bool on = true) { bias_grad_done_ = on; }

  std::int64_t in_features_, out_features_;
  ParameterPtr weight_, bias_;
  Tensor x_;  // input of the last forward, as [rows, in]
  Activation fused_ = Activation::identity;
  bool bias_grad_done_ = false;
};

}  // namespace cohort::nn
