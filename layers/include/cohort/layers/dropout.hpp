// Dropout: in training, zeroes each element with probability p and scales the rest by 1/(1-p)
// (torch.nn.Dropout); identity in evaluation. The mask is a pure function of (seed, step, element)
// through Philox4x32-10, so it is reproducible: the seed comes from the init stream when the layer
// is built (nn::manual_seed makes it deterministic) and `step` counts training forwards. Backward
// regenerates the mask instead of storing it. Masks differ from PyTorch's (another generator).
#pragma once

#include <cstdint>

#include "cohort/core/op_options.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::nn {

class Dropout : public Module {
 public:
  explicit Dropout(float p = 0.5f);

  float p() const { return drop_prob_; }
  std::uint64_t seed() const { return seed_; }
  void set_seed(std::uint64_t seed) { seed_ = seed; }
  // The number of training forwards so far; the next one draws the mask of step `step()`.
  std::uint64_t step() const { return step_; }
  void set_step(std::uint64_t step) { step_ = step; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override { return input; }
  void release_saved() override { x_ = Tensor(); }

 private:
  // The Sequential fusion (sequential.hpp) is the only caller: internal coordination, not API.
  friend class Sequential;
  // Whether the next forward drops anything (training and p > 0): fusion applies only then.
  bool would_apply() const { return is_training() && drop_prob_ > 0.0f; }
  // The next forward is dropout(f(x)) in one pass, and its backward f's backward too (from x,
  // kept for it); the activation layer before passes through (ActivationLayer::pass_through_once).
  void fuse_activation_once(Activation f, float alpha) {
    fusing_ = f;
    fusing_alpha_ = alpha;
  }

  float drop_prob_;
  std::uint64_t seed_, step_ = 0;
  bool applied_ = false;            // the last forward dropped (training and p > 0)
  std::uint64_t applied_step_ = 0;  // its step
  Activation fusing_ = Activation::identity;  // fuse_activation_once, for the next forward
  float fusing_alpha_ = 0.0f;
  Activation fused_ = Activation::identity;  // the activation the last forward applied
  float fused_alpha_ = 0.0f;
  Tensor x_;  // that forward's input, when it applied an activation
};

}  // namespace cohort::nn
