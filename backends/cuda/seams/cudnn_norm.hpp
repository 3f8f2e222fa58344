// The values norm.cpp passes to cuDNN's batch normalisation in training
// (cudnnBatchNormalizationForwardTraining, cudnnBatchNormalizationBackward), computed by plain
// C++ so that a CPU test (tests/vendor) can execute them through a reference written from cuDNN's
// documented meaning and compare with the host device (see cudnn_conv.hpp for the pattern).
//
// cuDNN's meaning (cudnn_ops.h), SPATIAL mode: statistics per channel over N x H x W of x, here
// [n, c, inner, 1], and [1, c, 1, 1] scale/bias/statistics tensors:
//   mean, var = batch mean and biased variance;  xhat = (x - mean) / sqrt(var + epsilon)
//   y = alpha * (scale * xhat + bias) + beta * y
//   running_mean = mean * factor + running_mean * (1 - factor)
//   running_var  = var_u * factor + running_var * (1 - factor), var_u = var * M / (M - 1)
//   save_mean = mean, save_inv_variance = 1 / sqrt(var + epsilon)
//   backward: dx = alphaData * dL/dx + betaData * dx; dscale = alphaParam * sum(dy * xhat) +
//             betaParam * dscale, dbias likewise with sum(dy), from the saved statistics.
// The header states the running-mean formula and that the variance's average is applied "in the
// same way"; it does not name the estimator. The unbiased one (Bessel's correction) is what
// cuDNN computes and what frameworks built on it (PyTorch's cudnn_batch_norm) rely on for
// torch.nn.BatchNorm's documented running_var; it is also cohort's contract (BatchNormArgs).
#pragma once

#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "cuda/seams/cudnn_values.hpp"

namespace cohort::cuda::seams {

struct BnForwardValues {
  // false: not training, M = n * inner < 2 (the unbiased variance is undefined; the shared
  // kernels give the contract's inf), epsilon below CUDNN_BN_MIN_EPSILON (0.0), or an extent
  // beyond cuDNN's int descriptors. Nothing below is set then.
  bool covered = false;
  int mode = cudnn_enum::kBatchNormSpatial;
  Tensor4d x;   // x and y: [n, c, inner, 1]
  Tensor4d bn;  // scale, bias, running and saved statistics: [1, c, 1, 1]
  float alpha = 1.0f, beta = 0.0f;  // y is overwritten
  double epsilon = 0.0;
  double exponential_average_factor = 0.0;  // = momentum
  bool update_running = false;  // running_mean and running_var given (cuDNN: both or neither)
  bool unit_scale = false;      // no gamma: cuDNN gets a [c] scratch of ones
  bool zero_bias = false;       // no beta: a [c] scratch of zeros
  std::int64_t m = 0;           // values per channel, n * inner
  bool running_var_unbiased = true;  // see the header comment
};

struct BnBackwardValues {
  bool covered = false;  // as for the forward
  int mode = cudnn_enum::kBatchNormSpatial;
  Tensor4d x;  // x, dy, dx
  Tensor4d bn;
  float alpha_data = 1.0f, beta_data = 0.0f;    // dx is overwritten
  float alpha_param = 1.0f, beta_param = 1.0f;  // dgamma and dbeta accumulate
  double epsilon = 0.0;
  bool unit_scale = false;  // no gamma: a scratch of ones
  // cuDNN writes dx, dscale and dbias always: the ones the call does not ask for go to scratch.
  bool dx_scratch = false, dgamma_scratch = false, dbeta_scratch = false;
};

// Throws (COHORT_CHECK naming the field) for an args struct that contradicts itself (a negative
// extent, running_mean without running_var).
BnForwardValues bn_forward_values(const calls::BatchNormForward& c);
BnBackwardValues bn_backward_values(const calls::BatchNormBackward& c);

}  // namespace cohort::cuda::seams
