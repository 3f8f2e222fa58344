// EncoderBlock (see cohort/layers/encoder_block.hpp): two residual branches written out, forward
// and backward side by side; the first branch's residual add runs in ln_2's passes when fused.
// Backward runs the branches in reverse (mlp, ln_2, then dropout, self_attention, ln_1), so
// grad-ready hooks fire in reverse registration order; each residual sum's gradient is the branch's
// input gradient plus the gradient passed straight through.
#include "cohort/layers/encoder_block.hpp"

#include "cohort/core/ops.hpp"
#include "cohort/layers/activation.hpp"
#include "cohort/layers/dropout.hpp"
#include "cohort/layers/init.hpp"
#include "cohort/layers/linear.hpp"
#include "fusion_env.hpp"

namespace cohort::nn {
namespace {
// torchvision's MLPBlock initialisation.
std::shared_ptr<Linear> mlp_linear(std::int64_t in, std::int64_t out, Device& dev) {
  auto l = make<Linear>(in, out, dev);
  l->weight()->value.copy_from(xavier_uniform(Shape{out, in}, dev));
  l->bias()->value.copy_from(init_normal(Shape{out}, 0.0f, 1e-6f, dev));
  return l;
}
}  // namespace

EncoderBlock::EncoderBlock(std::int64_t hidden_dim, std::int64_t num_heads, std::int64_t mlp_dim,
                           Device& device, EncoderBlockOptions o)
    : Module("EncoderBlock"), hidden_dim_(hidden_dim), fusion_(detail::fusion_by_default()) {
  COHORT_MODULE_CHECK(hidden_dim >= 1 && num_heads >= 1 && mlp_dim >= 1, "hidden_dim (",
                      hidden_dim, "), num_heads (", num_heads, ") and mlp_dim (", mlp_dim,
                      ") must be positive");
  COHORT_MODULE_CHECK(hidden_dim % num_heads == 0, "hidden_dim ", hidden_dim,
                      " is not divisible by num_heads ", num_heads);
  ln_1_ = make<LayerNorm>(std::vector<std::int64_t>{hidden_dim_}, device, o.ln_eps);
  attn_ = make<MultiheadAttention>(hidden_dim_, num_heads, device);
  dropout_ = make<Dropout>(o.dropout_p);
  ln_2_ = make<LayerNorm>(std::vector<std::int64_t>{hidden_dim_}, device, o.ln_eps);
  mlp_ = sequential({mlp_linear(hidden_dim_, mlp_dim, device), make<GELU>(),
                     make<Dropout>(o.dropout_p), mlp_linear(mlp_dim, hidden_dim_, device),
                     make<Dropout>(o.dropout_p)});
  register_module("ln_1", ln_1_);
  register_module("self_attention", attn_);
  register_module("dropout", dropout_);
  register_module("ln_2", ln_2_);
  register_module("mlp", mlp_);
}

Shape EncoderBlock::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 3 && input[2] == hidden_dim_, "expected input [N, T, ",
                      hidden_dim_, "] (batch, tokens, hidden_dim), got ", input);
  return input;
}

Tensor EncoderBlock::forward_impl(const Tensor& input) {
  output_shape_impl(input.shape());
  const Tensor a = dropout_->forward(attn_->forward(ln_1_->forward(input)));
  fused_ = fusion_;
  Tensor x = Tensor::empty(input.shape(), DType::f32, input.device()), h;
  if (fused_) {  // x = input + a in ln_2's pass
    ln_2_->fuse_residual_once(input, x);
    h = ln_2_->forward(a);
  } else {
    ops::add(input, a, x);
    h = ln_2_->forward(x);
  }
  const Tensor m = mlp_->forward(h);
  Tensor y = Tensor::empty(input.shape(), DType::f32, input.device());
  ops::add(x, m, y);
  return y;
}

Tensor EncoderBlock::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  // y = x + mlp(ln_2(x)): dx = dy + ln_2's input gradient (in ln_2's pass when fused)
  Tensor dx;
  if (fused_) {
    ln_2_->fuse_grad_add_once(grad_output);
    dx = ln_2_->backward(mlp_->backward(grad_output));
  } else {
    const Tensor dm = ln_2_->backward(mlp_->backward(grad_output));
    dx = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
    ops::add(grad_output, dm, dx);
  }
  // x = input + dropout(self_attention(ln_1(input)))
  const Tensor da =
      ln_1_->backward(attn_->backward(dropout_->backward(dx)), need_input_grad);
  if (!need_input_grad) return Tensor();
  Tensor dinput = Tensor::empty(dx.shape(), DType::f32, dx.device());
  ops::add(dx, da, dinput);
  return dinput;
}

void EncoderBlock::summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const {
  Module::summarize(input, depth, rows);
  for (const auto& [name, child] : children()) summarize_child(*child, input, depth + 1, rows);
}

}  // namespace cohort::nn
