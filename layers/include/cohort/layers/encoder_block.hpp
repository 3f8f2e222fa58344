// EncoderBlock: the pre-norm transformer layer of torchvision's vision transformer
// (torchvision/models/vision_transformer.py, EncoderBlock), with its state_dict names:
//
//   x = input + dropout(self_attention(ln_1(input)))
//   y = x + mlp(ln_2(x)),   mlp = Sequential(0: Linear(D, mlp_dim), 1: GELU, 2: Dropout,
//                                            3: Linear(mlp_dim, D), 4: Dropout)
//
// Children ln_1, self_attention (MultiheadAttention), dropout, ln_2, mlp; keys such as
// ln_1.weight, self_attention.in_proj_weight, self_attention.out_proj.bias, mlp.0.weight,
// mlp.3.bias. Initialisation as torchvision's: LayerNorm 1 / 0, attention as
// MultiheadAttention, the MLP's linear weights xavier-uniform and biases N(0, 1e-6^2).
#pragma once

#include <cstdint>
#include <memory>

#include "cohort/layers/attention.hpp"
#include "cohort/layers/layernorm.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/layers/sequential.hpp"

namespace cohort::nn {

struct EncoderBlockOptions {
  EncoderBlockOptions& eps(float v) { ln_eps = v; return *this; }
  EncoderBlockOptions& dropout(float p) { dropout_p = p; return *this; }

  float ln_eps = 1e-6f;     // both LayerNorms (torchvision's ViT: 1e-6)
  float dropout_p = 0.0f;   // after attention and inside the MLP (torchvision's default 0)
};

class EncoderBlock : public Module {
 public:
  // hidden_dim a positive multiple of num_heads; mlp_dim >= 1.
  EncoderBlock(std::int64_t hidden_dim, std::int64_t num_heads, std::int64_t mlp_dim,
               Device& device, EncoderBlockOptions options = {});

  const std::shared_ptr<LayerNorm>& ln_1() const { return ln_1_; }
  const std::shared_ptr<MultiheadAttention>& self_attention() const { return attn_; }
  const std::shared_ptr<LayerNorm>& ln_2() const { return ln_2_; }
  const std::shared_ptr<Sequential>& mlp() const { return mlp_; }

  // Fusion (default on, or as COHORT_FUSION says when the block is built): `x = input + a` goes
  // into ln_2's pass (ops::layer_norm_forward's residual), and backward's `dx = dy + dm` into
  // ln_2's backward pass (dx_add); the same bits as unfused. Off: every step on its own, for A/B
  // runs. The MLP's own fusion is its Sequential's (mlp()->set_fusion).
  void set_fusion(bool on) { fusion_ = on; }
  bool fusion() const { return fusion_; }

 protected:
  // Input [N, T, hidden_dim], output the same shape.
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override;

 private:
  std::int64_t hidden_dim_;
  std::shared_ptr<LayerNorm> ln_1_, ln_2_;
  std::shared_ptr<MultiheadAttention> attn_;
  ModulePtr dropout_;
  std::shared_ptr<Sequential> mlp_;
  bool fusion_;
  bool fused_ = false;  // the last forward fused (its backward does too)
};

}  // namespace cohort::nn
