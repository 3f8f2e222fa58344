// The values every cuDNN convolution call of conv2d.cpp is made with, computed from the op's
// call struct by plain C++ (no CUDA or cuDNN header), so that a CPU test (tests/vendor) can run
// them through a naive reference written from cuDNN's documented meaning and compare with the host
// device. conv2d.cpp sets its descriptors from these structs field by field and passes alpha and
// beta from here; it decides nothing about a convolution's shape itself.
//
// cuDNN's meaning (cudnn_cnn.h, legacy API), NCHW f32, CROSS_CORRELATION, group count G:
//   forward:          y  = alpha * conv(x, w)   + beta * y
//   forward fused:    y  = act(alpha * conv(x, w) + alpha2 * z + bias)   (ConvBiasActivation)
//   backward data:    dx = alpha * convT(dy, w) + beta * dx
//   backward filter:  dw = alpha * corr(x, dy)  + beta * dw
//   backward bias:    db = alpha * sum_{n,p,q} dy + beta * db, db described as [1, K, 1, 1]
// The op contract (cohort/backend/op_calls.hpp) overwrites y and dx (beta 0) and accumulates dw and
// dbias (beta 1).
//
// Under autocast (Conv2dArgs::compute bf16 or f16) the convolution runs in cuDNN's
// PSEUDO_BFLOAT16 / PSEUDO_HALF configuration: x, w, y (dx, dy, dw) all 16-bit, compute f32. The
// caller (op_table.cu) rounds the f32 inputs to 16-bit copies, and the 16-bit result is widened
// into the f32 output: written for y and dx, added for dw (`accumulate_widened`), because a dw
// accumulated by cuDNN's beta would sum in 16-bit. So under autocast beta is 0 in every direction.
// This is PyTorch's autocast result too: its convolution returns bf16 / f16, and the weight's
// gradient is the 16-bit one widened by the cast's backward. The bias gradient stays f32 (dy is).
#pragma once

#include "cohort/backend/op_calls.hpp"
#include "cuda/seams/cudnn_values.hpp"

namespace cohort::cuda::seams {

enum class ConvDir : int { forward, backward_data, backward_filter };

// cudnnSetFilter4dDescriptor's k, c, h, w (f32, NCHW): c is the channels of one group.
struct Filter4d {
  int k = 0, c = 0, r = 0, s = 0;
};

struct ConvValues {
  // false: some extent, or a tensor's element count, does not fit cuDNN's int descriptors and
  // 32-bit indexing (or is < 1); nothing below is set and the shared kernels run the case.
  bool covered = false;
  Tensor4d x;  // [N, C, H, W]
  Filter4d w;  // [K, C / groups, R, S]
  Tensor4d y;  // [N, K, P, Q]
  // cudnnSetConvolution2dDescriptor, in its argument order; then cudnnSetConvolutionGroupCount.
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int mode = cudnn_enum::kCrossCorrelation;
  int compute_type = cudnn_enum::kDataFloat;
  int groups = 1;
  // The data type of x, w and y (every descriptor of the call): f32, or under autocast bf16 / f16.
  int data_type = cudnn_enum::kDataFloat;
  bool lowp = false;  // data_type is 16-bit: the caller passes rounded copies (see above)
  // The blend of the direction's call: y or dx overwritten (beta 0), dw accumulated (beta 1; 0
  // under autocast, when the caller adds the widened result: accumulate_widened).
  float alpha = 1.0f, beta = 0.0f;
  bool accumulate_widened = false;
  // Forward only: whether the op runs whole in cudnnConvolutionBiasActivationForward, with z = y
  // and alpha2 = 0 (y's old contents do not count), bias described as [1, K, 1, 1] (`bias`) and
  // act RELU with NaN propagated (torch.relu's NaN). Only for f32 with a bias and ReLU: cuDNN's
  // IDENTITY there runs only under IMPLICIT_PRECOMP_GEMM (the ranked algorithm may be faster
  // unfused), it has no leaky ReLU or GELU, and under autocast it would add the bias to a 16-bit
  // result where PyTorch's autocast and the unfused path add it in f32 after widening. Otherwise
  // the caller runs bias + activation as its own pass over y.
  bool fused_bias_act = false;
  Tensor4d bias;
  int act_mode = cudnn_enum::kActivationRelu;
  int act_nan = cudnn_enum::kPropagateNan;
  float alpha2 = 0.0f;
  // Backward filter only: whether cudnnConvolutionBackwardBias runs (the call has a dbias), its
  // db descriptor and blend (dbias +=: alpha 1, beta 1). Its dy descriptor is `y`.
  bool bias_grad = false;
  Tensor4d db;
  float bias_alpha = 1.0f, bias_beta = 1.0f;
};

// The values for one call. Throws (COHORT_CHECK, naming the field) when the args contradict
// themselves (groups not dividing c or k, oh/ow not the output size of the window, a compute type
// other than f32, bf16 and f16), which the op front ends never send; returns covered == false for
// what cuDNN cannot take.
ConvValues conv_values(const calls::Conv2dForward& c);
ConvValues conv_values(const calls::Conv2dBackwardData& c);
ConvValues conv_values(const calls::Conv2dBackwardFilter& c);

}  // namespace cohort::cuda::seams
