// LayerNorm over the trailing dimensions `normalized_shape`, as torch.nn.LayerNorm (weight ones,
// bias zeros when elementwise_affine).
#pragma once

#include <vector>

#include "cohort/layers/module.hpp"

namespace cohort::nn {

class LayerNorm : public Module {
 public:
  LayerNorm(std::vector<std::int64_t> normalized_shape, Device& device, float eps = 1e-5f,
            bool elementwise_affine = true);

  const ParameterPtr& weight() const { return weight_; }  // null without affine
  const ParameterPtr& bias() const { return bias_; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { x_ = mean_ = rstd_ = Tensor(); }

 private:
  std::vector<std::int64_t> shape_;
  std::int64_t numel_ = 1;
  float eps_;
  ParameterPtr weight_, bias_;
  Tensor x_, mean_, rstd_;
};

}  // namespace cohort::nn
