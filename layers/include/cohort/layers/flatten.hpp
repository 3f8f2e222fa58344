// Flatten: merges dimensions start_dim..end_dim (default 1..-1: [N, C, H, W] -> [N, C*H*W] in
// C-H-W order), as torch.nn.Flatten. A view: no copy.
#pragma once

#include "cohort/layers/module.hpp"

namespace cohort::nn {

class Flatten : public Module {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1)
      : Module("Flatten"), start_(start_dim), end_(end_dim) {}

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;

 private:
  int start_, end_;
  Shape x_shape_;
};

}  // namespace cohort::nn
