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
  void release_saved() override { x_ = mean_ = rstd_ = residual_ = sum_ = grad_add_ = Tensor(); }

 private:
  // A block's residual fusion (EncoderBlock) is the only caller: internal coordination, not API.
  friend class EncoderBlock;
  // The next forward normalises input + `residual` in one pass (ops::layer_norm_forward's
  // residual), writing the sum into `sum` (the caller's tensor, of the input's shape).
  void fuse_residual_once(const Tensor& residual, const Tensor& sum) {
    residual_ = residual;
    sum_ = sum;
  }
  // The next backward returns `add` + its input gradient, summed in the same pass.
  void fuse_grad_add_once(const Tensor& add) { grad_add_ = add; }

  std::vector<std::int64_t> shape_;
  std::int64_t numel_ = 1;
  float eps_;
  ParameterPtr weight_, bias_;
  Tensor x_, mean_, rstd_;            // x_: what was normalised (the sum, when fused)
  Tensor residual_, sum_, grad_add_;  // the fusions asked for the next forward / backward
};

}  // namespace cohort::nn
