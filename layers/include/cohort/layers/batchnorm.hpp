// BatchNorm2d: per-channel batch normalisation of NCHW input, as torch.nn.BatchNorm2d: batch
// statistics in training (running statistics updated with `momentum`, or a cumulative average
// when momentum is unset), running statistics in evaluation. Buffers running_mean, running_var
// and num_batches_tracked (i64, shape []) under PyTorch's names.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "cohort/layers/module.hpp"

namespace cohort::nn {

// What synchronised batch norm needs of a process group (parallel::batch_norm_group makes one
// over a communicator; layers do not depend on the collectives). Every rank of the group calls
// allreduce_sum in the same order with the same n.
class BatchNormGroup {
 public:
  virtual ~BatchNormGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // Sums `data` (n doubles) over the group's ranks in place; every rank ends with the same bits.
  // Collective; blocks.
  virtual void allreduce_sum(double* data, std::size_t n) = 0;
};

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

  // Synchronised batch norm (torch.nn.SyncBatchNorm; parallel::convert_sync_batchnorm sets it on
  // every batch norm of a model): in training, the statistics are those of the whole global batch
  // over `group`'s ranks (one all-reduce forward gathering each rank's count, means and
  // variances, world x (2C + 1) doubles; one of 2C backward, sum(dy) and sum(dy xhat)),
  // so every rank normalises as one BatchNorm2d would over the concatenated batch and holds the
  // same running statistics. Evaluation does not communicate (the running statistics, or with
  // track_running_stats = false each rank's own batch, as torch); a group of one is plain batch
  // norm. null: plain batch norm.
  void set_sync_group(std::shared_ptr<BatchNormGroup> group) { group_ = std::move(group); }
  const std::shared_ptr<BatchNormGroup>& sync_group() const { return group_; }

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

  // The synchronised path (batchnorm_sync.cpp): forward's statistics over the group, backward's
  // sums over the group; m_total_ is the global batch's values per channel.
  std::shared_ptr<BatchNormGroup> group_;
  bool synced_ = false;  // the last training forward went through the group
  double m_total_ = 0;
  Tensor sync_forward(const Tensor& x, float momentum);
  Tensor sync_backward(const Tensor& grad_output, bool need_input_grad);
};

}  // namespace cohort::nn
