// The cuDNN enum values and descriptor shapes the seams (cudnn_conv.hpp, cudnn_norm.hpp) speak in,
// as plain ints and structs: the seams and their CPU tests (tests/vendor) must build without
// cudnn.h, and cudnn_state.hpp and the family files (conv2d.cpp, norm.cpp, softmax_loss.cpp) static_asserts every number here against the real enums, so a cuDNN
// release that renumbers one fails the CUDA build instead of passing a wrong value.
#pragma once

#include <climits>
#include <cstdint>
#include <initializer_list>

namespace cohort::cuda::seams {

// cuDNN's descriptors take int extents and its legacy kernels index tensors with 32-bit offsets:
// every extent in 1..INT_MAX.
inline bool fits_int(std::initializer_list<std::int64_t> v) {
  for (std::int64_t x : v)
    if (x < 1 || x > INT_MAX) return false;
  return true;
}

namespace cudnn_enum {
// cudnnTensorFormat_t, cudnnDataType_t (cudnn_graph.h)
constexpr int kTensorNchw = 0;
constexpr int kDataFloat = 0;
constexpr int kDataHalf = 2;
constexpr int kDataBfloat16 = 9;
// cudnnConvolutionMode_t (cudnn_graph.h)
constexpr int kConvolution = 0;
constexpr int kCrossCorrelation = 1;
// cudnnMathType_t (cudnn_graph.h)
constexpr int kDefaultMath = 0;
constexpr int kTensorOpMath = 1;
constexpr int kTensorOpMathAllowConversion = 2;
constexpr int kFmaMath = 3;
// cudnnDeterminism_t (cudnn_ops.h)
constexpr int kNonDeterministic = 0;
constexpr int kDeterministic = 1;
// cudnnBatchNormMode_t (cudnn_ops.h)
constexpr int kBatchNormSpatial = 1;
// cudnnSoftmaxAlgorithm_t, cudnnSoftmaxMode_t (cudnn_ops.h)
constexpr int kSoftmaxAccurate = 1;
constexpr int kSoftmaxLog = 2;
constexpr int kSoftmaxModeChannel = 1;
// cudnnActivationMode_t, cudnnNanPropagation_t (cudnn_ops.h / cudnn_graph.h)
constexpr int kActivationRelu = 1;
constexpr int kPropagateNan = 1;
// cudnnStatus_t (cudnn_graph.h): success, and the NOT_SUPPORTED category with its sub-codes.
constexpr int kStatusSuccess = 0;
constexpr int kStatusBadParam = 2000;
constexpr int kStatusNotSupported = 3000;
constexpr int kStatusNotSupportedLast = 3014;  // ..._INVALID_DYNAMIC_SHAPE in cuDNN 9.19
constexpr int kStatusInternalError = 4000;  // 4000-4999: CUDNN_STATUS_INTERNAL_ERROR_*
}  // namespace cudnn_enum

// A 4-D NCHW tensor descriptor (f32 unless a seam says otherwise) (cudnnSetTensor4dDescriptor's n,
// c, h, w), dense strides.
struct Tensor4d {
  int n = 0, c = 0, h = 0, w = 0;
};

}  // namespace cohort::cuda::seams
