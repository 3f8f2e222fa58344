// MultiheadAttention: torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True) used for
// self-attention (query = key = value = x, need_weights=False), as a transformer encoder block
// calls it:
//
//   [q | k | v] = x in_proj_weight^T + in_proj_bias            one GEMM, [N * T, 3E]
//   head h:  o_h = softmax(q_h k_h^T / sqrt(dh)) v_h            dh = E / num_heads
//   y = out_proj([o_1 | ... | o_H])                              the heads side by side, [N, T, E]
//
// The middle line is one fused op by default (ops::attention_forward / attention_backward: the
// T x T probabilities never stored, no head permutations; PyTorch's MultiheadAttention calls
// scaled_dot_product_attention there too). set_fused(false), or COHORT_ATTENTION=unfused in the
// environment, runs it as separate ops instead (two head permutations, batched GEMMs and a softmax
// each way), for A/B runs. Under autocast bf16 / f16 the layer runs the separate ops, whose
// batched GEMMs compute in that type (the fused op is f32 only), and says so once.
//
// Parameters with PyTorch's names, shapes and initialisation: in_proj_weight [3E, E]
// (xavier-uniform), in_proj_bias [3E] (zeros) and the child out_proj (Linear E -> E with
// PyTorch's default weight and a zero bias), so state_dict keys are in_proj_weight,
// in_proj_bias, out_proj.weight, out_proj.bias.
//
// Not supported (PyTorch's defaults are what is implemented): attention dropout, masks, separate
// key and value inputs (kdim, vdim), bias_k / bias_v, add_zero_attn, returning the weights.
#pragma once

#include <cstdint>
#include <memory>

#include "cohort/layers/linear.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

class MultiheadAttention : public Module {
 public:
  // embed_dim must be a positive multiple of num_heads.
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, Device& device);

  const ParameterPtr& in_proj_weight() const { return in_proj_weight_; }
  const ParameterPtr& in_proj_bias() const { return in_proj_bias_; }
  const std::shared_ptr<Linear>& out_proj() const { return out_proj_; }
  std::int64_t embed_dim() const { return embed_dim_; }
  std::int64_t num_heads() const { return num_heads_; }
  std::int64_t head_dim() const { return head_dim_; }
  // The fused attention op (default: on, or what COHORT_ATTENTION says: fused or unfused; another
  // value throws, naming it, when the layer is built).
  void set_fused(bool on) { fused_ = on; }
  bool fused() const { return fused_; }

 protected:
  // Input [N, T, E] (batch first: N sequences of T tokens), output [N, T, E].
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { x_ = qkv_ = probs_ = out_ = lse_ = Tensor(); }
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override;

 private:
  // From the in-projection's output [N * T, 3E]; both return the heads side by side.
  Tensor forward_fused(const Tensor& proj, Device& dev);
  Tensor backward_fused(const Tensor& dmerged, Device& dev);
  Tensor forward_unfused(const Tensor& proj, Device& dev);
  Tensor backward_unfused(const Tensor& dmerged, Device& dev);

  std::int64_t embed_dim_, num_heads_, head_dim_;
  bool fused_ = true;
  bool ran_fused_ = false;  // the path the last forward took
  ParameterPtr in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
  // What backward needs from the last forward.
  std::int64_t batch_ = 0, seq_len_ = 0;  // N and T
  Tensor x_;      // the input as [N * T, E]
  Tensor qkv_;    // fused: [N, T, 3, H, dh], the projection; unfused: [3, N * H, T, dh]
  Tensor probs_;  // unfused: [N * H, T, T], the attention probabilities
  Tensor out_;    // fused: [N, T, H, dh], the attention's output
  Tensor lse_;    // fused: [N, H, T], each query row's log-sum-exp
};

}  // namespace cohort::nn
