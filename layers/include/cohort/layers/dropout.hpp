// Dropout: in training, zeroes each element with probability p and scales the rest by 1/(1-p)
// (torch.nn.Dropout); identity in evaluation. The mask is a pure function of (seed, step, element)
// through Philox4x32-10, so it is reproducible: the seed comes from the init stream when the layer
// is built (nn::manual_seed makes it deterministic) and `step` counts training forwards. Backward
// regenerates the mask instead of storing it. Masks differ from PyTorch's (another generator).
#pragma once

#include <cstdint>

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

 private:
  float drop_prob_;
  std::uint64_t seed_, step_ = 0;
  bool applied_ = false;            // the last forward dropped (training and p > 0)
  std::uint64_t applied_step_ = 0;  // its step
};

}  // namespace cohort::nn
