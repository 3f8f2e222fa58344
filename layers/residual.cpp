// Residual: y = after(block(x) + shortcut(x)). Backward runs the shortcut first (it was registered
// last, so its grad-ready hooks fire first, keeping hooks in reverse registration order), then the
// block, and sums the two input gradients.
#include "cohort/layers/residual.hpp"

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"

namespace cohort::nn {

Residual::Residual(ModulePtr block, ModulePtr shortcut, ResidualOptions options)
    : Module("Residual"), block_(std::move(block)), shortcut_(std::move(shortcut)),
      options_(std::move(options)) {
  COHORT_MODULE_CHECK(block_ != nullptr, "the block is null");
  COHORT_MODULE_CHECK(options_.after == Activation::identity || options_.after == Activation::relu,
                      "the activation after the sum must be identity or relu, got ",
                      activation_name(options_.after));
  if (options_.block.empty()) {
    if (shortcut_)
      for (const auto& [n, c] : block_->children())
        COHORT_MODULE_CHECK(n != options_.shortcut, "the inlined block has a child named '", n,
                            "', the shortcut's name too");
    register_inlined_module(block_);
  } else {
    register_module(options_.block, block_);
  }
  if (shortcut_) register_module(options_.shortcut, shortcut_);
}

Shape Residual::output_shape_impl(const Shape& input) const {
  const Shape b = block_->output_shape(input);
  const Shape s = shortcut_ ? shortcut_->output_shape(input) : input;
  COHORT_MODULE_CHECK(b == s, "block output ", b, " and shortcut output ", s,
                      " differ for input ", input,
                      shortcut_ ? "" : " (the identity shortcut needs a shape-preserving block; "
                                       "add a projection shortcut)");
  return b;
}

Tensor Residual::forward_impl(const Tensor& x) {
  output_shape_impl(x.shape());
  const Tensor b = block_->forward(x);
  const Tensor s = shortcut_ ? shortcut_->forward(x) : x;
  Tensor y = Tensor::empty(b.shape(), DType::f32, b.device());
  ops::add(b, s, y, options_.after);  // the sum and the ReLU in one pass
  if (options_.after != Activation::identity) y_ = y;
  return y;
}

Tensor Residual::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Tensor g = grad_output;
  if (options_.after != Activation::identity) {  // relu's backward reads its output
    g = Tensor::empty(grad_output.shape(), DType::f32, grad_output.device());
    ops::activation_backward(options_.after, 0.0f, y_, y_, grad_output, g);
    y_ = Tensor();
  }
  Tensor gs = shortcut_ ? shortcut_->backward(g, need_input_grad) : g;
  Tensor gb = block_->backward(g, need_input_grad);
  if (!need_input_grad) return Tensor();
  Tensor dx = Tensor::empty(gb.shape(), DType::f32, gb.device());
  ops::add(gb, gs, dx);
  return dx;
}

void Residual::summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const {
  Module::summarize(input, depth, rows);
  block_->summarize(input, depth + 1, rows);
  if (shortcut_) shortcut_->summarize(input, depth + 1, rows);
}

}  // namespace cohort::nn
