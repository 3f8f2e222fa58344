// MultiheadAttention (see cohort/layers/attention.hpp). The fused path hands the projection
// [N, T, 3, H, dh] to ops::attention_forward / attention_backward
// (backends/common/ops/attention.hpp has the math) and gets dproj back in the same layout. The
// unfused path keeps the heads' q, k, v in one [3, N*H, T, dh] tensor and the probabilities P; its
// backward is, per head,
//   dV = P^T dO,  dP = dO V^T,  dS = softmax_backward(P, dP),
//   dQ = dS K / sqrt(dh),  dK = dS^T Q / sqrt(dh),
// written into one [3, N*H, T, dh] tensor that the inverse permutation turns back into the
// [N*T, 3E] gradient of the input projection: one GEMM each for dW, dx, one reduction for db.
//
// Layout moves are two permutations each way: [N, T, 3, H, dh] <-> [3, N, H, T, dh] (the
// projection's rows into heads) and [N, H, T, dh] <-> [N, T, H, dh] (heads back side by side).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cohort/core/autocast.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers/attention.hpp"
#include "cohort/layers/init.hpp"

namespace cohort::nn {
namespace {
const std::vector<int> kSplitHeads = {2, 0, 3, 1, 4};  // [N, T, 3, H, dh] -> [3, N, H, T, dh]
const std::vector<int> kMergeHeads = {0, 2, 1, 3};     // [N, H, T, dh] <-> [N, T, H, dh]

// COHORT_ATTENTION: fused (the default) or unfused.
bool fused_by_default() {
  const char* v = std::getenv("COHORT_ATTENTION");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "fused") == 0) return true;
  COHORT_CHECK(std::strcmp(v, "unfused") == 0, "COHORT_ATTENTION='", v,
               "' is not an attention path: use fused (the default) or unfused");
  return false;
}
}  // namespace

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       Device& device)
    : Module("MultiheadAttention"),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      head_dim_(0),
      fused_(fused_by_default()) {
  const std::int64_t e = embed_dim_, h = num_heads_;
  COHORT_MODULE_CHECK(e >= 1 && h >= 1, "embed_dim (", e, ") and num_heads (", h,
                      ") must be positive");
  COHORT_MODULE_CHECK(e % h == 0, "embed_dim ", e, " is not divisible by num_heads ", h);
  head_dim_ = e / h;
  // PyTorch's _reset_parameters: xavier-uniform in_proj_weight, zero biases; out_proj keeps
  // Linear's default weight.
  in_proj_weight_ = register_parameter("in_proj_weight", xavier_uniform(Shape{3 * e, e}, device));
  in_proj_bias_ =
      register_parameter("in_proj_bias", Tensor::zeros(Shape{3 * e}, DType::f32, device));
  out_proj_ = make<Linear>(e, e, device);
  ops::fill(out_proj_->bias()->value, 0.0);
  register_module("out_proj", out_proj_);
}

Shape MultiheadAttention::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 3 && input[2] == embed_dim_, "expected input [N, T, ",
                      embed_dim_, "] (batch first), got ", input);
  return input;
}

// In forward and backward, the letters of the shapes above: n = N (batch), t = T (sequence),
// e = E (embedding), h = H (heads), dh = E / H, b = N * H (the batched GEMMs' batch).

Tensor MultiheadAttention::forward_impl(const Tensor& x) {
  output_shape_impl(x.shape());
  COHORT_MODULE_CHECK(x.dtype() == DType::f32, "input must be f32, got ", dtype_name(x.dtype()));
  COHORT_MODULE_CHECK(&x.device() == &in_proj_weight_->value.device(), "input is on ",
                      x.device().name(), ", parameters are on ",
                      in_proj_weight_->value.device().name());
  Device& dev = x.device();
  batch_ = x.dim(0);
  seq_len_ = x.dim(1);
  x_ = x.reshape({batch_ * seq_len_, embed_dim_});
  ran_fused_ = fused_;
  if (fused_ && autocast_dtype(dev) != DType::f32) {
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr,
                   "cohort: MultiheadAttention under autocast %s runs the unfused attention ops "
                   "(their batched GEMMs in %s; the fused op is f32 only)\n",
                   dtype_name(autocast_dtype(dev)), dtype_name(autocast_dtype(dev)));
    });
    ran_fused_ = false;
  }
  // [q | k | v] = x W_in^T + b_in: [N * T, 3E], which is [N, T, 3, H, dh] as it stands.
  Tensor proj = Tensor::empty(Shape{batch_ * seq_len_, 3 * embed_dim_}, DType::f32, dev);
  ops::gemm(x_, false, in_proj_weight_->value, true, proj);
  ops::bias_add(in_proj_bias_->value, proj, -1);
  const Tensor merged = ran_fused_ ? forward_fused(proj, dev) : forward_unfused(proj, dev);
  return out_proj_->forward(merged.reshape({batch_, seq_len_, embed_dim_}));
}

Tensor MultiheadAttention::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Device& dev = grad_output.device();
  const std::int64_t rows = batch_ * seq_len_, e = embed_dim_;
  const Tensor dmerged = out_proj_->backward(grad_output, true);
  const Tensor dproj = ran_fused_ ? backward_fused(dmerged, dev) : backward_unfused(dmerged, dev);
  if (in_proj_bias_->requires_grad) {
    ops::bias_grad(dproj, in_proj_bias_->grad, -1);
    grad_ready(in_proj_bias_);
  }
  if (in_proj_weight_->requires_grad) {
    ops::gemm(dproj, true, x_, false, in_proj_weight_->grad, 1.0f, 1.0f);
    grad_ready(in_proj_weight_);
  }
  Tensor dx;
  if (need_input_grad) {
    dx = Tensor::empty(Shape{rows, e}, DType::f32, dev);
    ops::gemm(dproj, false, in_proj_weight_->value, false, dx);
    dx = dx.reshape({batch_, seq_len_, e});
  }
  release_saved();
  return dx;
}

// The op reads the projection as it stands and writes the heads side by side, [N, T, H, dh],
// which is the output projection's input as it stands.
Tensor MultiheadAttention::forward_fused(const Tensor& proj, Device& dev) {
  const std::int64_t n = batch_, t = seq_len_, h = num_heads_, dh = head_dim_;
  qkv_ = proj.reshape({n, t, 3, h, dh});
  out_ = Tensor::empty(Shape{n, t, h, dh}, DType::f32, dev);
  lse_ = Tensor::empty(Shape{n, h, t}, DType::f32, dev);
  ops::attention_forward(qkv_, out_, lse_, 1.0f / std::sqrt(static_cast<float>(dh)));
  return out_;
}

// dproj [N * T, 3E] straight from the op.
Tensor MultiheadAttention::backward_fused(const Tensor& dmerged, Device& dev) {
  const std::int64_t n = batch_, t = seq_len_, h = num_heads_, dh = head_dim_;
  Tensor dqkv = Tensor::empty(qkv_.shape(), DType::f32, dev);
  ops::attention_backward(qkv_, out_, lse_, dmerged.reshape({n, t, h, dh}), dqkv,
                          1.0f / std::sqrt(static_cast<float>(dh)));
  return dqkv.reshape({n * t, 3 * embed_dim_});
}

Tensor MultiheadAttention::forward_unfused(const Tensor& proj, Device& dev) {
  const std::int64_t n = batch_, t = seq_len_, h = num_heads_, dh = head_dim_;
  const std::int64_t b = n * h;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  qkv_ = ops::permute(proj.reshape({n, t, 3, h, dh}), kSplitHeads).reshape({3, b, t, dh});
  const Tensor q = qkv_.slice(0, 1).reshape({b, t, dh});
  const Tensor k = qkv_.slice(1, 2).reshape({b, t, dh});
  const Tensor v = qkv_.slice(2, 3).reshape({b, t, dh});
  Tensor s = Tensor::empty(Shape{b, t, t}, DType::f32, dev);
  ops::gemm_batched(q, false, k, true, s, scale);
  probs_ = Tensor::empty(Shape{b, t, t}, DType::f32, dev);
  ops::softmax_forward(false, s, probs_, -1);
  Tensor o = Tensor::empty(Shape{b, t, dh}, DType::f32, dev);
  ops::gemm_batched(probs_, false, v, false, o);
  return ops::permute(o.reshape({n, h, t, dh}), kMergeHeads);
}

Tensor MultiheadAttention::backward_unfused(const Tensor& dmerged, Device& dev) {
  const std::int64_t n = batch_, t = seq_len_, e = embed_dim_, h = num_heads_, dh = head_dim_;
  const std::int64_t rows = n * t, b = n * h;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const Tensor dout = ops::permute(dmerged.reshape({n, t, h, dh}), kMergeHeads).reshape({b, t, dh});
  const Tensor q = qkv_.slice(0, 1).reshape({b, t, dh});
  const Tensor k = qkv_.slice(1, 2).reshape({b, t, dh});
  const Tensor v = qkv_.slice(2, 3).reshape({b, t, dh});
  Tensor dqkv = Tensor::empty(Shape{3, b, t, dh}, DType::f32, dev);
  Tensor dq = dqkv.slice(0, 1).reshape({b, t, dh});
  Tensor dk = dqkv.slice(1, 2).reshape({b, t, dh});
  Tensor dv = dqkv.slice(2, 3).reshape({b, t, dh});
  ops::gemm_batched(probs_, true, dout, false, dv);
  Tensor dp = Tensor::empty(Shape{b, t, t}, DType::f32, dev);
  ops::gemm_batched(dout, false, v, true, dp);
  Tensor ds = Tensor::empty(Shape{b, t, t}, DType::f32, dev);
  ops::softmax_backward(false, probs_, dp, ds, -1);
  ops::gemm_batched(ds, false, k, false, dq, scale);
  ops::gemm_batched(ds, true, q, false, dk, scale);
  return ops::permute(dqkv.reshape({3, n, h, t, dh}), ops::inverse_permutation(kSplitHeads))
      .reshape({rows, 3 * e});
}

void MultiheadAttention::summarize(const Shape& input, int depth,
                                   std::vector<SummaryRow>& rows) const {
  Module::summarize(input, depth, rows);
  summarize_child(*out_proj_, input, depth + 1, rows);
}

}  // namespace cohort::nn
