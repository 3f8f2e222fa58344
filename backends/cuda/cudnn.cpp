// The cuDNN handle of a CUDA device (cudnn.hpp): created bound to the compute stream, and the
// checks that tie the seams' int copies of cuDNN's enums to cudnn.h. The calls for each op family
// are in the file named after it: conv2d.cpp, norm.cpp, softmax_loss.cpp.
#include <cstdio>
#include <string>

#include "cudnn_state.hpp"

namespace cohort::cuda {
namespace e = seams::cudnn_enum;
static_assert(e::kTensorNchw == CUDNN_TENSOR_NCHW && e::kDataFloat == CUDNN_DATA_FLOAT &&
              e::kDataHalf == CUDNN_DATA_HALF && e::kDataBfloat16 == CUDNN_DATA_BFLOAT16);
static_assert(e::kConvolution == CUDNN_CONVOLUTION && e::kCrossCorrelation == CUDNN_CROSS_CORRELATION);
static_assert(e::kDefaultMath == CUDNN_DEFAULT_MATH && e::kTensorOpMath == CUDNN_TENSOR_OP_MATH &&
              e::kTensorOpMathAllowConversion == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
              e::kFmaMath == CUDNN_FMA_MATH);
static_assert(e::kNonDeterministic == CUDNN_NON_DETERMINISTIC &&
              e::kDeterministic == CUDNN_DETERMINISTIC);
static_assert(e::kBatchNormSpatial == CUDNN_BATCHNORM_SPATIAL);
static_assert(e::kActivationRelu == CUDNN_ACTIVATION_RELU &&
              e::kPropagateNan == CUDNN_PROPAGATE_NAN);
static_assert(CUDNN_BN_MIN_EPSILON <= 0.0, "cuda/seams/cudnn_norm.cpp assumes a minimum epsilon of 0");
static_assert(e::kSoftmaxAccurate == CUDNN_SOFTMAX_ACCURATE && e::kSoftmaxLog == CUDNN_SOFTMAX_LOG &&
              e::kSoftmaxModeChannel == CUDNN_SOFTMAX_MODE_CHANNEL);
static_assert(e::kStatusSuccess == CUDNN_STATUS_SUCCESS &&
              e::kStatusBadParam == CUDNN_STATUS_BAD_PARAM &&
              e::kStatusNotSupported == CUDNN_STATUS_NOT_SUPPORTED &&
              e::kStatusNotSupportedLast == CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE);
// The algorithm name tables of seams/cudnn_conv_algo.cpp are indexed by these enums.
static_assert(CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8 && CUDNN_CONVOLUTION_FWD_ALGO_DIRECT == 3 &&
              CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING == 5 &&
              CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7);
static_assert(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6 &&
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING == 3 &&
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED == 5);
static_assert(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT == 7 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 == 3 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED == 5 &&
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING == 6);


namespace cudnn_detail {
bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("COHORT_CUDNN_LOG");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

}  // namespace cudnn_detail

Cudnn::Cudnn(CudaDevice& device) : s_(std::make_unique<State>(device)) {
  void* stream = device.stream();  // also makes the device current, which the handle binds to
  COHORT_CHECK_CUDNN(cudnnCreate(&s_->handle));
  const cudnnStatus_t st = cudnnSetStream(s_->handle, static_cast<cudaStream_t>(stream));
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(s_->handle);
    COHORT_CHECK_CUDNN(st);
  }
}

Cudnn::~Cudnn() {
  if (s_ && s_->handle) cudnnDestroy(s_->handle);
}

std::size_t Cudnn::cached_algorithms() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->algos.size();
}

std::vector<Cudnn::ConvAlgorithmUsed> Cudnn::last_algorithms() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  std::vector<ConvAlgorithmUsed> out;
  for (const auto& [dir, used] : s_->last) out.push_back(used);
  return out;
}

}  // namespace cohort::cuda
