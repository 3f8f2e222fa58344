// BatchNorm2d: per-channel batch normalisation of NCHW input, as torch.nn.BatchNorm2d: batch
// statistics in training (running statistics updated with `momentum`, or a cumulative average
// when momentum is unset), running statistics in evaluation. Buffers running_mean, running_var
// and num_batches_tracked (i64, shape []) under PyTorch's names.
#pragma once

#include <optional>

#include "cohort/layers/module.hpp"

namespace cohort::nn {

struct BatchNormOptions {
  float eps = 1e-5f;
  std::optional<float> momentum = 0.1f;  // std::nullopt: cumulative moving average
  bool affine = true;                    // learnable weight (gamma) and bias (beta)
  bool track_running_stats = true;       // false: batch statistics in evaluation too
};

class BatchNorm2d : public Module {
 public:
  BatchNorm2d(std::int64_t num_features, Device& device, BatchNormOptions options = {});

  const ParameterPtr& weight() const { return weight_; }  // null unless affine
  const ParameterPtr& bias() const { return bias_; }
  std::int64_t num_features() const { return num_features_; }
  const BatchNormOptions& options() const { return options_; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void release_saved() override { x_ = save_mean_ = save_invstd_ = Tensor(); }
  void on_state_loaded() override;

 private:
  std::int64_t num_features_;
  BatchNormOptions options_;
  ParameterPtr weight_, bias_;
  std::int64_t batches_tracked_ = 0;  // host copy of num_batches_tracked
  Tensor x_, save_mean_, save_invstd_;
  bool used_batch_stats_ = true;
};

}  // namespace cohort::nn
