// MultiheadAttention (see cohort/layers/attention.hpp). Forward keeps the heads' q, k, v in one
// [3, N*H, T, dh] tensor and the probabilities P; backward is, per head,
//   dV = P^T dO,  dP = dO V^T,  dS = softmax_backward(P, dP),
//   dQ = dS K / sqrt(dh),  dK = dS^T Q / sqrt(dh),
// written into one [3, N*H, T, dh] tensor that the inverse permutation turns back into the
// [N*T, 3E] gradient of the input projection: one GEMM each for dW, dx, one reduction for db.
//
// Layout moves are two permutations each way: [N, T, 3, H, dh] <-> [3, N, H, T, dh] (the
// projection's rows into heads) and [N, H, T, dh] <-> [N, T, H, dh] (heads back side by side).
#include <cmath>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/attention.hpp"
#include "cohort/layers/init.hpp"

namespace cohort::nn {
namespace {
const std::vector<int> kSplitHeads = {2, 0, 3, 1, 4};  // [N, T, 3, H, dh] -> [3, N, H, T, dh]
const std::vector<int> kMergeHeads = {0, 2, 1, 3};     // [N, H, T, dh] <-> [N, T, H, dh]
}  // namespace

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       Device& device)
    : Module("MultiheadAttention"), e_(embed_dim), h_(num_heads), dh_(0) {
  COHORT_MODULE_CHECK(e_ >= 1 && h_ >= 1, "embed_dim (", e_, ") and num_heads (", h_,
                      ") must be positive");
  COHORT_MODULE_CHECK(e_ % h_ == 0, "embed_dim ", e_, " is not divisible by num_heads ", h_);
  dh_ = e_ / h_;
  // PyTorch's _reset_parameters: xavier-uniform in_proj_weight, zero biases; out_proj keeps
  // Linear's default weight.
  w_ = register_parameter("in_proj_weight", xavier_uniform(Shape{3 * e_, e_}, device));
  b_ = register_parameter("in_proj_bias", Tensor::zeros(Shape{3 * e_}, DType::f32, device));
  out_proj_ = make<Linear>(e_, e_, device);
  ops::fill(out_proj_->bias()->value, 0.0);
  register_module("out_proj", out_proj_);
}

Shape MultiheadAttention::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 3 && input[2] == e_, "expected input [N, T, ", e_,
                      "] (batch first), got ", input);
  return input;
}

Tensor MultiheadAttention::forward_impl(const Tensor& x) {
  output_shape_impl(x.shape());
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()));
  COHORT_MODULE_CHECK(&x.device() == &w_->value.device(), "input is on ", x.device().name(),
                      ", parameters are on ", w_->value.device().name());
  Device& dev = x.device();
  n_ = x.dim(0);
  t_ = x.dim(1);
  const std::int64_t rows = n_ * t_, b = n_ * h_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh_));
  x_ = x.reshape({rows, e_});
  Tensor proj = Tensor::empty(Shape{rows, 3 * e_}, DType::f32, dev);
  ops::gemm(x_, false, w_->value, true, proj);
  ops::bias_add(b_->value, proj, -1);
  qkv_ = ops::permute(proj.reshape({n_, t_, 3, h_, dh_}), kSplitHeads).reshape({3, b, t_, dh_});
  const Tensor q = qkv_.slice(0, 1).reshape({b, t_, dh_});
  const Tensor k = qkv_.slice(1, 2).reshape({b, t_, dh_});
  const Tensor v = qkv_.slice(2, 3).reshape({b, t_, dh_});
  Tensor s = Tensor::empty(Shape{b, t_, t_}, DType::f32, dev);
  ops::gemm_batched(q, false, k, true, s, scale);
  p_ = Tensor::empty(Shape{b, t_, t_}, DType::f32, dev);
  ops::softmax_forward(false, s, p_, -1);
  Tensor o = Tensor::empty(Shape{b, t_, dh_}, DType::f32, dev);
  ops::gemm_batched(p_, false, v, false, o);
  const Tensor merged = ops::permute(o.reshape({n_, h_, t_, dh_}), kMergeHeads);
  return out_proj_->forward(merged.reshape({n_, t_, e_}));
}

Tensor MultiheadAttention::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Device& dev = grad_output.device();
  const std::int64_t rows = n_ * t_, b = n_ * h_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh_));
  const Tensor dmerged = out_proj_->backward(grad_output, true);
  const Tensor dout =
      ops::permute(dmerged.reshape({n_, t_, h_, dh_}), kMergeHeads).reshape({b, t_, dh_});
  const Tensor q = qkv_.slice(0, 1).reshape({b, t_, dh_});
  const Tensor k = qkv_.slice(1, 2).reshape({b, t_, dh_});
  const Tensor v = qkv_.slice(2, 3).reshape({b, t_, dh_});
  Tensor dqkv = Tensor::empty(Shape{3, b, t_, dh_}, DType::f32, dev);
  Tensor dq = dqkv.slice(0, 1).reshape({b, t_, dh_});
  Tensor dk = dqkv.slice(1, 2).reshape({b, t_, dh_});
  Tensor dv = dqkv.slice(2, 3).reshape({b, t_, dh_});
  ops::gemm_batched(p_, true, dout, false, dv);
  Tensor dp = Tensor::empty(Shape{b, t_, t_}, DType::f32, dev);
  ops::gemm_batched(dout, false, v, true, dp);
  Tensor ds = Tensor::empty(Shape{b, t_, t_}, DType::f32, dev);
  ops::softmax_backward(false, p_, dp, ds, -1);
  ops::gemm_batched(ds, false, k, false, dq, scale);
  ops::gemm_batched(ds, true, q, false, dk, scale);
  const Tensor dproj = ops::permute(dqkv.reshape({3, n_, h_, t_, dh_}),
                                    ops::inverse_permutation(kSplitHeads))
                           .reshape({rows, 3 * e_});
  if (b_->requires_grad) {
    ops::bias_grad(dproj, b_->grad, -1);
    grad_ready(b_);
  }
  if (w_->requires_grad) {
    ops::gemm(dproj, true, x_, false, w_->grad, 1.0f, 1.0f);
    grad_ready(w_);
  }
  Tensor dx;
  if (need_input_grad) {
    dx = Tensor::empty(Shape{rows, e_}, DType::f32, dev);
    ops::gemm(dproj, false, w_->value, false, dx);
    dx = dx.reshape({n_, t_, e_});
  }
  x_ = qkv_ = p_ = Tensor();
  return dx;
}

void MultiheadAttention::summarize(const Shape& input, int depth,
                                   std::vector<SummaryRow>& rows) const {
  Module::summarize(input, depth, rows);
  summarize_child(*out_proj_, input, depth + 1, rows);
}

}  // namespace cohort::nn
