// BatchNorm2d: statistics, normalisation and the running-stat update are one device op
// (batch_norm_forward), the three gradients another. What this file decides is PyTorch's policy:
// which statistics a mode uses, the momentum (fixed, or 1 / num_batches_tracked when momentum is
// None), and the num_batches_tracked counter.
#include "cohort/core/device.hpp"
#include "cohort/layers/batchnorm.hpp"

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"

namespace cohort::nn {

BatchNorm2d::BatchNorm2d(std::int64_t num_features, Device& device, BatchNormOptions options)
    : Module("BatchNorm2d"), num_features_(num_features), options_(options) {
  COHORT_MODULE_CHECK(num_features_ >= 1, "num_features must be positive, got ", num_features_);
  COHORT_MODULE_CHECK(options_.eps > 0.0f, "eps must be positive, got ", options_.eps);
  if (options_.affine) {
    weight_ =
        register_parameter("weight", Tensor::full(Shape{num_features_}, 1.0, DType::f32, device));
    bias_ = register_parameter("bias", Tensor::zeros(Shape{num_features_}, DType::f32, device));
  }
  if (options_.track_running_stats) {
    register_buffer("running_mean", Tensor::zeros(Shape{num_features_}, DType::f32, device));
    register_buffer("running_var", Tensor::full(Shape{num_features_}, 1.0, DType::f32, device));
    register_buffer("num_batches_tracked", Tensor::zeros(Shape{}, DType::i64, device));
  }
}

Shape BatchNorm2d::output_shape_impl(const Shape& input) const {
  COHORT_MODULE_CHECK(input.rank() == 4 && input[1] == num_features_, "expected 4-D input [N, ",
                      num_features_, ", H, W], got ", input);
  return input;
}

Tensor BatchNorm2d::forward_impl(const Tensor& x) {
  output_shape_impl(x.shape());
  const bool batch_stats = is_training() || !options_.track_running_stats;
  // (Synchronised: the global batch needs more than one value per channel; checked there.)
  COHORT_MODULE_CHECK(!batch_stats || (is_training() && group_ && group_->size() > 1) ||
                          x.dim(0) * x.dim(2) * x.dim(3) > 1,
                      "training needs more than 1 value per channel, got input ", x.shape());
  float momentum = 0.0f;
  Tensor* rm = nullptr;
  Tensor* rv = nullptr;
  if (options_.track_running_stats) {
    Tensor& mean = buffer("running_mean");
    COHORT_MODULE_CHECK(&x.device() == &mean.device(), "input is on ", x.device().name(),
                        ", buffers are on ", mean.device().name());
    if (is_training()) {
      // PyTorch increments num_batches_tracked before using it for the cumulative average. The
      // host keeps the count (no device read per step); load_state_dict refreshes it.
      ++batches_tracked_;
      ops::fill(buffer("num_batches_tracked"), static_cast<double>(batches_tracked_));
      momentum =
          options_.momentum ? *options_.momentum : 1.0f / static_cast<float>(batches_tracked_);
    }
    rm = &mean;
    rv = &buffer("running_var");
  }
  // As torch's SyncBatchNorm: only a training forward communicates (an evaluation with batch
  // statistics, track_running_stats = false, normalises each rank's batch by itself).
  synced_ = is_training() && group_ && group_->size() > 1;
  if (synced_) {
    used_batch_stats_ = true;
    x_ = x;
    return sync_forward(x, momentum);
  }
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  save_mean_ = Tensor::empty(Shape{num_features_}, DType::f32, x.device());
  save_invstd_ = Tensor::empty(Shape{num_features_}, DType::f32, x.device());
  ops::batch_norm_forward(x, weight_ ? &weight_->value : nullptr, bias_ ? &bias_->value : nullptr,
                          rm, rv, y, save_mean_, save_invstd_, options_.eps, momentum, batch_stats);
  used_batch_stats_ = batch_stats;
  x_ = x;
  return y;
}

void BatchNorm2d::on_state_loaded() {
  if (options_.track_running_stats)
    batches_tracked_ = static_cast<std::int64_t>(buffer("num_batches_tracked").item());
}

Tensor BatchNorm2d::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  if (synced_) return sync_backward(grad_output, need_input_grad);
  Tensor dx;
  if (need_input_grad) dx = Tensor::empty(x_.shape(), DType::f32, x_.device());
  const bool gw = weight_ && weight_->requires_grad, gb = bias_ && bias_->requires_grad;
  ops::batch_norm_backward(x_, grad_output, weight_ ? &weight_->value : nullptr, save_mean_,
                           save_invstd_, need_input_grad ? &dx : nullptr,
                           gw ? &weight_->grad : nullptr, gb ? &bias_->grad : nullptr,
                           used_batch_stats_);
  if (gb) grad_ready(bias_);
  if (gw) grad_ready(weight_);
  x_ = Tensor();
  return dx;
}

}  // namespace cohort::nn
