// Residual: y = after(block(x) + shortcut(x)), the shortcut being the identity or a projection
// module (a strided 1x1 convolution with batch norm in ResNets), `after` an optional activation
// (ReLU in ResNet blocks). By default the children are named "block" and "shortcut" and nothing
// follows the addition; ResidualOptions gives PyTorch models' own names:
//
//   torchvision's Bottleneck (layer1.0.conv1, layer1.0.downsample.0, ReLU after the sum):
//     Residual(seq_of_conv1_bn1_..._bn3, downsample, ResidualOptions().inline_block()
//                                                       .shortcut_name("downsample").relu_after())
//   `out = self.res1(out) + out` with res1 an nn.Sequential (res1.0.0.weight):
//     Residual(res1_sequential, nullptr, ResidualOptions().inline_block())
#pragma once

#include <string>

#include "cohort/core/op_options.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

struct ResidualOptions {
  // "": the block's own children sit directly under the residual's path (see
  // Module::register_inlined_module); otherwise the block is the child of that name.
  ResidualOptions& block_name(std::string n) { block = std::move(n); return *this; }
  ResidualOptions& inline_block() { return block_name(""); }
  ResidualOptions& shortcut_name(std::string n) { shortcut = std::move(n); return *this; }
  ResidualOptions& relu_after() { after = Activation::relu; return *this; }

  std::string block = "block", shortcut = "shortcut";
  Activation after = Activation::identity;  // identity or relu
};

class Residual : public Module {
 public:
  explicit Residual(ModulePtr block, ModulePtr shortcut = nullptr, ResidualOptions options = {});

  const ModulePtr& block() const { return block_; }
  const ModulePtr& shortcut() const { return shortcut_; }  // null: identity

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { y_ = Tensor(); }
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override;

 private:
  ModulePtr block_, shortcut_;
  ResidualOptions options_;
  Tensor y_;  // the output, kept for `after`'s backward
};

}  // namespace cohort::nn
