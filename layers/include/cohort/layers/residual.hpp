// Residual: y = block(x) + shortcut(x), the shortcut being the identity or a projection module
// (a strided 1x1 convolution with batch norm in ResNets). Children are named "block" and
// "shortcut"; a ResNet's post-addition ReLU is the next layer of the enclosing Sequential.
#pragma once

#include "cohort/layers/module.hpp"

namespace cohort::nn {

class Residual : public Module {
 public:
  explicit Residual(ModulePtr block, ModulePtr shortcut = nullptr);

  const ModulePtr& block() const { return block_; }
  const ModulePtr& shortcut() const { return shortcut_; }  // null: identity

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override;

 private:
  ModulePtr block_, shortcut_;
};

}  // namespace cohort::nn
