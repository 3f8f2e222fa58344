// Linear: y = x W^T + b over the last dimension, as torch.nn.Linear.
#pragma once

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
  std::int64_t in_features_, out_features_;
  ParameterPtr weight_, bias_;
  Tensor x_;  // input of the last forward, as [rows, in]
};

}  // namespace cohort::nn
