// The normalisation family on the CUDA device: cuDNN's batch normalisation in training mode
// (forward and backward, SPATIAL mode on [n, c, inner, 1]). op_table.cu routes batch norm here
// first; eval mode and every case cuDNN declines run the shared family (backends/common/ops/norm.hpp).
// Every argument comes from seams/cudnn_norm.hpp, checked on the CPU by tests/vendor.
#include "cuda/seams/cudnn_norm.hpp"
#include "cudnn_state.hpp"

namespace cohort::cuda {

using namespace cudnn_detail;

// Batch norm as cuDNN's SPATIAL mode on [n, c, inner, 1]; every value from seams/cudnn_norm.hpp.
bool Cudnn::batch_norm_forward(const calls::BatchNormForward& c) {
  const seams::BnForwardValues v = seams::bn_forward_values(c);
  if (!v.covered) return false;
  const TensorDesc x = tensor_desc(v.x), bn = tensor_desc(v.bn);
  const std::size_t cbytes = static_cast<std::size_t>(v.bn.c) * sizeof(float);
  // cuDNN needs scale and bias; a layer without affine parameters gets 1 and 0.
  State::Scratch ones(s_->device, v.unit_scale ? cbytes : 0),
      zeros(s_->device, v.zero_bias ? cbytes : 0);
  const float one = 1.0f, zero = 0.0f;
  if (v.unit_scale) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.get(), ones.p, &one));
  if (v.zero_bias) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.get(), zeros.p, &zero));
  COHORT_CUDNN_EXECUTE(cudnnBatchNormalizationForwardTraining(
      s_->handle, static_cast<cudnnBatchNormMode_t>(v.mode), &v.alpha, &v.beta, x.get(), c.x,
      x.get(), c.y, bn.get(), v.unit_scale ? ones.f() : c.gamma, v.zero_bias ? zeros.f() : c.beta,
      v.exponential_average_factor, v.update_running ? c.running_mean : nullptr,
      v.update_running ? c.running_var : nullptr, v.epsilon, c.save_mean, c.save_invstd));
}

bool Cudnn::batch_norm_backward(const calls::BatchNormBackward& c) {
  const seams::BnBackwardValues v = seams::bn_backward_values(c);
  if (!v.covered) return false;
  const TensorDesc x = tensor_desc(v.x), bn = tensor_desc(v.bn);
  const std::size_t cbytes = static_cast<std::size_t>(v.bn.c) * sizeof(float);
  const std::size_t xbytes =
      static_cast<std::size_t>(v.x.n) * v.x.c * v.x.h * v.x.w * sizeof(float);
  // cuDNN writes every output: the ones the caller did not ask for land in scratch.
  State::Scratch ones(s_->device, v.unit_scale ? cbytes : 0),
      dx(s_->device, v.dx_scratch ? xbytes : 0), dgamma(s_->device, v.dgamma_scratch ? cbytes : 0),
      dbeta(s_->device, v.dbeta_scratch ? cbytes : 0);
  const float one = 1.0f;
  if (v.unit_scale) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.get(), ones.p, &one));
  COHORT_CUDNN_EXECUTE(cudnnBatchNormalizationBackward(
      s_->handle, static_cast<cudnnBatchNormMode_t>(v.mode), &v.alpha_data, &v.beta_data,
      &v.alpha_param, &v.beta_param, x.get(), c.x, x.get(), c.dy, x.get(),
      v.dx_scratch ? dx.f() : c.dx, bn.get(), v.unit_scale ? ones.f() : c.gamma,
      v.dgamma_scratch ? dgamma.f() : c.dgamma, v.dbeta_scratch ? dbeta.f() : c.dbeta, v.epsilon,
      c.save_mean, c.save_invstd));
}

}  // namespace cohort::cuda
