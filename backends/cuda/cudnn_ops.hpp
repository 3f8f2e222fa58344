// cuDNN's share of the CUDA device's op table: whole-batch convolutions (forward, backward data,
// backward filter), batch normalisation in training, softmax and log-softmax. cuda_ops.cu routes
// those calls here and runs everything cuDNN does not cover on the shared kernels.
//
// Internal header, free of CUDA types (cudnn_ops.cpp holds the handle and descriptors).
//
// Each entry point returns false, having enqueued nothing, when cuDNN does not cover the case: an
// extent or element count beyond cuDNN's 32-bit descriptors, batch norm outside training (the
// contract also writes the running statistics into save_mean / save_invstd then, which cuDNN's
// inference call does not), or no convolution algorithm that satisfies the math mode.
//
// Which API: cuDNN 9's legacy calls (cudnnConvolutionForward, cudnnBatchNormalization*,
// cudnnSoftmax*), deprecated but shipped and documented, rather than the graph (backend) API. The
// graph API without cudnn_frontend (absent from every machine here) takes about ten descriptor
// objects and attribute calls per convolution, and none of it can be run on this machine to check;
// the legacy calls are the ones PyTorch drove for years, with known semantics. docs/GPU.md says
// more, and where the graph API would pay off (fused conv + bias + activation).
//
// Numerics: f32 in, f32 accumulation. TF32 only when cohort::allow_tf32(); only deterministic
// algorithms when cohort::deterministic_algorithms() (cohort/core/math_mode.hpp).
#pragma once

#include <cstddef>
#include <memory>

#include "cohort/core/op_calls.hpp"

namespace cohort::cuda {

class CudaDevice;

class Cudnn {
 public:
  // Creates the handle, bound to the device's compute stream (the device must be current).
  explicit Cudnn(CudaDevice& device);
  ~Cudnn();
  Cudnn(const Cudnn&) = delete;
  Cudnn& operator=(const Cudnn&) = delete;

  // y = conv(x, w): bias and activation are left to the caller (c.bias and c.a.act are ignored).
  bool conv_forward(const calls::Conv2dForward& c);
  // dx = conv^T(dy, w).
  bool conv_backward_data(const calls::Conv2dBackwardData& c);
  // dw += dy (*) x: dbias is left to the caller (c.dbias is ignored).
  bool conv_backward_filter(const calls::Conv2dBackwardFilter& c);
  // Training mode only (c.a.training).
  bool batch_norm_forward(const calls::BatchNormForward& c);
  bool batch_norm_backward(const calls::BatchNormBackward& c);
  bool softmax_forward(const calls::SoftmaxForward& c);
  bool softmax_backward(const calls::SoftmaxBackward& c);

  // Convolution algorithms chosen so far (one per shape, direction and math mode).
  std::size_t cached_algorithms() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace cohort::cuda
