// cuDNN calls for the CUDA device (see cudnn_ops.hpp for what is covered and why the legacy API).
// Plain C++: the host compiler builds it against cudnn.h; nothing here launches a kernel of ours.
//
// Every call is enqueued on the device's compute stream (the handle is bound to it) and returns
// without waiting. Workspaces and stand-in buffers come from the device's allocator and go back to
// it in stream order right after the call is enqueued, so cuDNN never allocates on its own and a
// training step after the first asks the driver for nothing.
#include "cudnn_ops.hpp"

#include <cudnn.h>

#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"

// The legacy convolution and batch-norm calls are marked deprecated in cuDNN 9; using them is the
// decision recorded in cudnn_ops.hpp, so their warnings are noise here.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace cohort::cuda {
namespace {

using i64 = std::int64_t;

// Workspace cap for one convolution: algorithms asking for more are passed over (cuDNN's heuristic
// list always ends in ones that need little or none).
constexpr std::size_t kMaxWorkspace = std::size_t{1} << 30;

bool fits_int(std::initializer_list<i64> v) {
  for (i64 x : v)
    if (x < 0 || x > INT_MAX) return false;
  return true;
}
int to_int(i64 v) { return static_cast<int>(v); }

// RAII descriptors: created per call (a few host-side calls, no device work), so nothing about a
// shape outlives the op except the chosen algorithm.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(i64 n, i64 c, i64 h, i64 w) {
    COHORT_CHECK_CUDNN(cudnnCreateTensorDescriptor(&d));
    COHORT_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(n),
                                                  to_int(c), to_int(h), to_int(w)));
  }
  TensorDesc() { COHORT_CHECK_CUDNN(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  explicit FilterDesc(const Conv2dArgs& a) {
    COHORT_CHECK_CUDNN(cudnnCreateFilterDescriptor(&d));
    COHORT_CHECK_CUDNN(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                  to_int(a.k), to_int(a.c / a.groups),
                                                  to_int(a.r), to_int(a.s)));
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  explicit ConvDesc(const Conv2dArgs& a) {
    COHORT_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&d));
    // Cross-correlation (PyTorch's Conv2d), f32 accumulation.
    COHORT_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(
        d, to_int(a.pad_h), to_int(a.pad_w), to_int(a.stride_h), to_int(a.stride_w),
        to_int(a.dil_h), to_int(a.dil_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    COHORT_CHECK_CUDNN(cudnnSetConvolutionGroupCount(d, to_int(a.groups)));
    // CUDNN_DEFAULT_MATH lets cuDNN use TF32 for f32 on Ampere and later; FMA_MATH forbids it.
    COHORT_CHECK_CUDNN(
        cudnnSetConvolutionMathType(d, allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

// Every descriptor of one convolution.
struct ConvDescs {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  explicit ConvDescs(const Conv2dArgs& a)
      : x(a.n, a.c, a.h, a.w), y(a.n, a.k, a.oh, a.ow), w(a), conv(a) {}
};

// cuDNN's descriptors take int extents and its kernels index the tensors with 32-bit offsets.
bool conv_fits(const Conv2dArgs& a) {
  return fits_int({a.n, a.c, a.h, a.w, a.k, a.r, a.s, a.oh, a.ow, a.pad_h, a.pad_w, a.stride_h,
                   a.stride_w, a.dil_h, a.dil_w, a.groups, a.n * a.c * a.h * a.w,
                   a.n * a.k * a.oh * a.ow, a.k * (a.c / a.groups) * a.r * a.s});
}

enum class Dir : int { forward, backward_data, backward_filter };

// What the algorithm cache is keyed on: the direction, every extent, and the two math modes (a
// change of mode picks again rather than reusing a choice made under the other rules).
using ConvKey = std::array<i64, 19>;
ConvKey key_of(Dir dir, const Conv2dArgs& a) {
  return {static_cast<i64>(dir), a.n,       a.c,        a.h,     a.w,     a.k,
          a.r,                   a.s,       a.stride_h, a.stride_w, a.pad_h, a.pad_w,
          a.dil_h,               a.dil_w,   a.groups,   a.oh,    a.ow,    allow_tf32() ? 1 : 0,
          deterministic_algorithms() ? 1 : 0};
}

struct Choice {
  int algo = -1;  // -1: no algorithm satisfies the rules (the shared kernels run the case)
  std::size_t workspace = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
};

// The first of cuDNN's heuristic ranking that succeeded, fits the workspace cap and obeys the math
// modes. Heuristics, not cudnnFind*: the Find calls time every algorithm on the GPU and
// synchronise, which the first step could afford but makes the choice depend on timing noise.
template <class Perf>
Choice pick(const Perf* perf, int returned) {
  const bool det = deterministic_algorithms(), tf32 = allow_tf32();
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspace) continue;
    if (det && p.determinism != CUDNN_DETERMINISTIC) continue;
    if (!tf32 && (p.mathType == CUDNN_TENSOR_OP_MATH ||
                  p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    return Choice{static_cast<int>(p.algo), p.memory, p.mathType};
  }
  return Choice{};
}

}  // namespace

struct Cudnn::State {
  CudaDevice& device;
  cudnnHandle_t handle = nullptr;
  mutable std::mutex mu;  // the algorithm cache; the handle is used from the device's stream only
  std::map<ConvKey, Choice> algos;

  explicit State(CudaDevice& d) : device(d) {}

  // Device memory that goes back to the allocator, in stream order, when the op has been enqueued.
  struct Scratch {
    CudaDevice& device;
    void* p = nullptr;
    std::size_t bytes = 0;
    Scratch(CudaDevice& d, std::size_t n) : device(d), p(d.allocate(n)), bytes(n) {}
    ~Scratch() { device.deallocate(p, bytes); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    float* f() const { return static_cast<float*>(p); }
  };

  Choice choose(Dir dir, const Conv2dArgs& a, const ConvDescs& d) {
    const ConvKey key = key_of(dir, a);
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = algos.find(key);
      if (it != algos.end()) return it->second;
    }
    Choice c;
    int returned = 0;
    switch (dir) {
      case Dir::forward: {
        std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
        COHORT_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
            handle, d.x.d, d.w.d, d.conv.d, d.y.d, static_cast<int>(perf.size()), &returned,
            perf.data()));
        c = pick(perf.data(), returned);
        break;
      }
      case Dir::backward_data: {
        std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
        COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, d.w.d, d.y.d, d.conv.d, d.x.d, static_cast<int>(perf.size()), &returned,
            perf.data()));
        c = pick(perf.data(), returned);
        break;
      }
      case Dir::backward_filter: {
        std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
            perf{};
        COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, d.x.d, d.y.d, d.conv.d, d.w.d, static_cast<int>(perf.size()), &returned,
            perf.data()));
        c = pick(perf.data(), returned);
        break;
      }
    }
    if (c.algo >= 0) {
      // The heuristic's memory estimate is for its own math type; ask for the exact size under the
      // math type the call will run with.
      COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(d.conv.d, c.math));
      switch (dir) {
        case Dir::forward:
          COHORT_CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(
              handle, d.x.d, d.w.d, d.conv.d, d.y.d,
              static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), &c.workspace));
          break;
        case Dir::backward_data:
          COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(
              handle, d.w.d, d.y.d, d.conv.d, d.x.d,
              static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), &c.workspace));
          break;
        case Dir::backward_filter:
          COHORT_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(
              handle, d.x.d, d.y.d, d.conv.d, d.w.d,
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), &c.workspace));
          break;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    algos.emplace(key, c);
    return c;
  }
};

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

bool Cudnn::conv_forward(const calls::Conv2dForward& c) {
  if (!conv_fits(c.a)) return false;
  ConvDescs d(c.a);
  const Choice ch = s_->choose(Dir::forward, c.a, d);
  if (ch.algo < 0) return false;
  COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(d.conv.d, ch.math));
  State::Scratch ws(s_->device, ch.workspace);
  const float one = 1.0f, zero = 0.0f;
  COHORT_CHECK_CUDNN(cudnnConvolutionForward(
      s_->handle, &one, d.x.d, c.x, d.w.d, c.w, d.conv.d,
      static_cast<cudnnConvolutionFwdAlgo_t>(ch.algo), ws.p, ch.workspace, &zero, d.y.d, c.y));
  return true;
}

bool Cudnn::conv_backward_data(const calls::Conv2dBackwardData& c) {
  if (!conv_fits(c.a)) return false;
  ConvDescs d(c.a);
  const Choice ch = s_->choose(Dir::backward_data, c.a, d);
  if (ch.algo < 0) return false;
  COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(d.conv.d, ch.math));
  State::Scratch ws(s_->device, ch.workspace);
  const float one = 1.0f, zero = 0.0f;  // dx is overwritten
  COHORT_CHECK_CUDNN(cudnnConvolutionBackwardData(
      s_->handle, &one, d.w.d, c.w, d.y.d, c.dy, d.conv.d,
      static_cast<cudnnConvolutionBwdDataAlgo_t>(ch.algo), ws.p, ch.workspace, &zero, d.x.d,
      c.dx));
  return true;
}

bool Cudnn::conv_backward_filter(const calls::Conv2dBackwardFilter& c) {
  if (!conv_fits(c.a)) return false;
  ConvDescs d(c.a);
  const Choice ch = s_->choose(Dir::backward_filter, c.a, d);
  if (ch.algo < 0) return false;
  COHORT_CHECK_CUDNN(cudnnSetConvolutionMathType(d.conv.d, ch.math));
  State::Scratch ws(s_->device, ch.workspace);
  const float one = 1.0f;  // beta 1: dw accumulates, as parameter gradients do
  COHORT_CHECK_CUDNN(cudnnConvolutionBackwardFilter(
      s_->handle, &one, d.x.d, c.x, d.y.d, c.dy, d.conv.d,
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(ch.algo), ws.p, ch.workspace, &one, d.w.d,
      c.dw));
  return true;
}

// Training only (see cudnn_ops.hpp); cuDNN's running variance divides by M - 1, M = n * inner,
// where the shared kernels give inf for M = 1: those run that case.
bool bn_covered(const BatchNormArgs& a) {
  return a.training && a.eps >= CUDNN_BN_MIN_EPSILON && a.n * a.inner >= 2 &&
         fits_int({a.n, a.c, a.inner, a.n * a.c * a.inner});
}
// x (and y, dy, dx) as [n, c, inner, 1]; bn the [1, c, 1, 1] of scale, bias and statistics.
struct BnDescs {
  TensorDesc x, bn;
  explicit BnDescs(const BatchNormArgs& a) : x(a.n, a.c, a.inner, 1) {
    COHORT_CHECK_CUDNN(cudnnDeriveBNTensorDescriptor(bn.d, x.d, CUDNN_BATCHNORM_SPATIAL));
  }
};

// Batch norm as cuDNN's SPATIAL mode: statistics per channel over (n, inner), the running variance
// updated with the unbiased batch variance, exponentialAverageFactor = momentum: the contract of
// BatchNormArgs. x is seen as [n, c, inner, 1].
bool Cudnn::batch_norm_forward(const calls::BatchNormForward& c) {
  const BatchNormArgs& a = c.a;
  if (!bn_covered(a)) return false;
  const BnDescs d(a);
  const TensorDesc &x = d.x, &bn = d.bn;
  const std::size_t cbytes = static_cast<std::size_t>(a.c) * sizeof(float);
  // cuDNN needs scale and bias; a layer without affine parameters gets 1 and 0.
  State::Scratch ones(s_->device, c.gamma ? 0 : cbytes), zeros(s_->device, c.beta ? 0 : cbytes);
  const float one = 1.0f, zero = 0.0f;
  if (!c.gamma) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.d, ones.p, &one));
  if (!c.beta) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.d, zeros.p, &zero));
  COHORT_CHECK_CUDNN(cudnnBatchNormalizationForwardTraining(
      s_->handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x.d, c.x, x.d, c.y, bn.d,
      c.gamma ? c.gamma : ones.f(), c.beta ? c.beta : zeros.f(), static_cast<double>(a.momentum),
      c.running_mean, c.running_var, static_cast<double>(a.eps), c.save_mean, c.save_invstd));
  return true;
}

bool Cudnn::batch_norm_backward(const calls::BatchNormBackward& c) {
  const BatchNormArgs& a = c.a;
  if (!bn_covered(a)) return false;
  const BnDescs d(a);
  const TensorDesc &x = d.x, &bn = d.bn;
  const std::size_t cbytes = static_cast<std::size_t>(a.c) * sizeof(float);
  const std::size_t xbytes = static_cast<std::size_t>(a.n * a.c * a.inner) * sizeof(float);
  // cuDNN writes every output: the ones the caller did not ask for land in scratch.
  State::Scratch ones(s_->device, c.gamma ? 0 : cbytes), dx(s_->device, c.dx ? 0 : xbytes),
      dgamma(s_->device, c.dgamma ? 0 : cbytes), dbeta(s_->device, c.dbeta ? 0 : cbytes);
  const float one = 1.0f, zero = 0.0f;
  if (!c.gamma) COHORT_CHECK_CUDNN(cudnnSetTensor(s_->handle, bn.d, ones.p, &one));
  // dx overwritten (beta 0); dgamma and dbeta accumulate (beta 1), as parameter gradients do.
  COHORT_CHECK_CUDNN(cudnnBatchNormalizationBackward(
      s_->handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &one, x.d, c.x, x.d, c.dy, x.d,
      c.dx ? c.dx : dx.f(), bn.d, c.gamma ? c.gamma : ones.f(), c.dgamma ? c.dgamma : dgamma.f(),
      c.dbeta ? c.dbeta : dbeta.f(), static_cast<double>(a.eps), c.save_mean, c.save_invstd));
  return true;
}

// Softmax along `channels` of [outer, channels, inner]: cuDNN's CHANNEL mode over [N, C, H, 1].
bool softmax_fits(const ChannelDims& d) {
  return fits_int({d.outer, d.channels, d.inner, d.numel()});
}
bool Cudnn::softmax_forward(const calls::SoftmaxForward& c) {
  if (!softmax_fits(c.d)) return false;
  TensorDesc t(c.d.outer, c.d.channels, c.d.inner, 1);
  const float one = 1.0f, zero = 0.0f;
  COHORT_CHECK_CUDNN(cudnnSoftmaxForward(s_->handle,
                                         c.log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                         CUDNN_SOFTMAX_MODE_CHANNEL, &one, t.d, c.x, &zero, t.d,
                                         c.y));
  return true;
}

bool Cudnn::softmax_backward(const calls::SoftmaxBackward& c) {
  if (!softmax_fits(c.d)) return false;
  TensorDesc t(c.d.outer, c.d.channels, c.d.inner, 1);
  const float one = 1.0f, zero = 0.0f;
  COHORT_CHECK_CUDNN(cudnnSoftmaxBackward(s_->handle,
                                          c.log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                          CUDNN_SOFTMAX_MODE_CHANNEL, &one, t.d, c.y, t.d, c.dy,
                                          &zero, t.d, c.dx));
  return true;
}

}  // namespace cohort::cuda
