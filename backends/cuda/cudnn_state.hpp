// What the cuDNN files of this backend share (cudnn.cpp: the handle; conv2d.cpp, norm.cpp,
// softmax_loss.cpp: each family's calls): the handle's state, RAII descriptors built from the
// seams' plain values, stream-ordered scratch, and the execute-status rule. Internal: it includes
// cudnn.h, so only backends/cuda/*.cpp include it.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cohort/core/error.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cudnn.hpp"
#include "cuda/seams/cudnn_conv_algo.hpp"
#include "cuda/seams/cudnn_status.hpp"
#include "cuda/seams/cudnn_values.hpp"

// The legacy convolution and batch-norm calls are marked deprecated in cuDNN 9; using them is the
// decision recorded in cudnn.hpp, so their warnings are noise in the files that include this.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace cohort::cuda {
namespace cudnn_detail {

using i64 = std::int64_t;
namespace e = seams::cudnn_enum;

// RAII descriptors, owned from the moment they are created: a Set* call that throws destroys the
// descriptor on the way out (GPU review G15). A convolution shape's descriptors are made once and
// kept with the chosen algorithms (State::descs, conv2d.cpp's descs_for); the others are made per
// call (host-side calls, no device work).
struct TensorDeleter {
  void operator()(cudnnTensorStruct* d) const noexcept { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDeleter {
  void operator()(cudnnFilterStruct* d) const noexcept { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDeleter {
  void operator()(cudnnConvolutionStruct* d) const noexcept {
    cudnnDestroyConvolutionDescriptor(d);
  }
};
struct ActivationDeleter {
  void operator()(cudnnActivationStruct* d) const noexcept { cudnnDestroyActivationDescriptor(d); }
};
using TensorDesc = std::unique_ptr<cudnnTensorStruct, TensorDeleter>;
using FilterDesc = std::unique_ptr<cudnnFilterStruct, FilterDeleter>;
using ConvDesc = std::unique_ptr<cudnnConvolutionStruct, ConvDeleter>;
using ActivationDesc = std::unique_ptr<cudnnActivationStruct, ActivationDeleter>;

inline TensorDesc tensor_desc(const seams::Tensor4d& t, int data_type = e::kDataFloat) {
  cudnnTensorDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateTensorDescriptor(&raw));
  TensorDesc d(raw);
  COHORT_CHECK_CUDNN(
      cudnnSetTensor4dDescriptor(d.get(), static_cast<cudnnTensorFormat_t>(e::kTensorNchw),
                                 static_cast<cudnnDataType_t>(data_type), t.n, t.c, t.h, t.w));
  return d;
}

inline FilterDesc filter_desc(const seams::Filter4d& f, int data_type = e::kDataFloat) {
  cudnnFilterDescriptor_t raw = nullptr;
  COHORT_CHECK_CUDNN(cudnnCreateFilterDescriptor(&raw));
  FilterDesc d(raw);
  COHORT_CHECK_CUDNN(cudnnSetFilter4dDescriptor(d.get(), static_cast<cudnnDataType_t>(data_type),
                                                static_cast<cudnnTensorFormat_t>(e::kTensorNchw),
                                                f.k, f.c, f.r, f.s));
  return d;
}

// What the algorithm cache is keyed on (conv2d.cpp): the direction (forward fused with bias and
// ReLU apart from plain forward), every extent, the three math modes and the data type (f32, or
// autocast's bf16 / f16).
using ConvKey = std::array<i64, 21>;

struct ConvDescs;  // every descriptor of one convolution shape (conv2d.cpp)

// COHORT_CUDNN_LOG=1: one stderr line per algorithm choice and per fallback, so a failure on a GPU
// can be read against the algorithm that produced it (GPU review G4).
bool log_enabled();

}  // namespace cudnn_detail

struct Cudnn::State {
  CudaDevice& device;
  cudnnHandle_t handle = nullptr;
  // The algorithm cache and the record of what ran; the handle is used from the device's stream
  // only.
  mutable std::mutex mu;
  std::map<cudnn_detail::ConvKey, std::vector<seams::RankedAlgo>> algos;  // empty list: shared kernels
  std::map<seams::ConvDir, ConvAlgorithmUsed> last;
  // Descriptors per convolution shape (conv2d.cpp's descs_for; the direction is not in the key).
  std::map<cudnn_detail::ConvKey, std::shared_ptr<cudnn_detail::ConvDescs>> conv_descs;

  explicit State(CudaDevice& d) : device(d) {}

  // Device memory that goes back to the allocator, in stream order, when the op has been enqueued;
  // with `to_driver`, back to the driver after the stream instead (benchmark mode's Find
  // workspace: a one-off size that would otherwise stay reserved for the life of the process,
  // GPU review 2 H5; PyTorch empties its whole cache after each Find).
  struct Scratch {
    CudaDevice& device;
    void* p = nullptr;
    std::size_t bytes = 0;
    bool to_driver = false;
    Scratch(CudaDevice& d, std::size_t n, bool release_to_driver = false)
        : device(d), p(d.allocate(n)), bytes(n), to_driver(release_to_driver) {}
    ~Scratch() {
      if (to_driver) {
        try {
          device.release(p);
          return;
        } catch (...) {  // the stream's wait failed: the op's own error says why
        }
      }
      device.deallocate(p, bytes);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    float* f() const { return static_cast<float*>(p); }
  };

  // Bytes a workspace may take now: the driver's free memory plus the allocator's cached blocks
  // (it releases those before it gives up). The device is current (its stream was asked for).
  std::size_t free_bytes() const {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();
      return seams::kMaxWorkspace * 2;  // unknown: the fixed cap alone
    }
    const MemoryStats m = device.memory_stats();
    return free + (m.bytes_reserved - m.bytes_in_use);
  }
};

// An execute call other than a convolution: true when it ran, false when cuDNN does not support
// it here (the shared kernels run the case), else throws.
#define COHORT_CUDNN_EXECUTE(call)                                                      \
  do {                                                                                  \
    const cudnnStatus_t cohort_st_ = (call);                                            \
    switch (seams::execute_status_action(static_cast<int>(cohort_st_))) {               \
      case seams::StatusAction::done: return true;                                      \
      case seams::StatusAction::decline: return false;                                  \
      case seams::StatusAction::fail: break;                                            \
    }                                                                                   \
    COHORT_CHECK_CUDNN(cohort_st_);                                                     \
    return false;                                                                       \
  } while (0)

}  // namespace cohort::cuda
