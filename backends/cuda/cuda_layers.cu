// CUDA op table, layer block: the shared implementation of cohort/detail/layer_impl.hpp with one
// GPU thread per work item (one grid-stride kernel template runs every functor of
// cohort/detail/layer_kernels.hpp) and GEMMs through this device's cuBLAS gemm. The host backend
// runs the very same functors under Kokkos (host_layers.cpp), so CPU-only CI tests this math.
//
// Correctness first: work items are rows, planes or channels (what the host needs), which keeps a
// GPU busy for training-sized batches but is not tuned; cuDNN convolutions and batch norm would be
// the next step here, behind the same op table. Built with --fmad=false like cuda_kernels.cu.
//
// Ops enqueue on the device's stream and return without waiting, except that growing the
// convolution scratch buffer frees the old one (cudaFree waits for the device).
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "cohort/detail/layer_impl.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"

namespace cohort::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr std::int64_t kMaxBlocks = 4096;  // grid-stride loops cover any count (cuda_kernels.cu)

template <class F>
__global__ void for_each_kernel(F f, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x)
    f(i);
}

struct CudaExec {
  Device* device;  // for gemm (cuBLAS on the same stream)
  cudaStream_t stream;
  void** scratch_ptr;
  std::size_t* scratch_bytes;

  template <class F>
  void for_each(const char*, std::int64_t count, const F& f) const {
    if (count <= 0) return;
    const std::int64_t blocks = (count + kThreads - 1) / kThreads;
    for_each_kernel<<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads,
                      0, stream>>>(f, count);
    COHORT_CHECK_CUDA(cudaGetLastError());
  }
  void gemm(const GemmArgs& g) const { device->gemm(g); }
  float* scratch(std::size_t floats) const {
    const std::size_t bytes = floats * sizeof(float);
    if (bytes > *scratch_bytes) {
      if (*scratch_ptr != nullptr) COHORT_CHECK_CUDA(cudaFree(*scratch_ptr));  // waits for users
      *scratch_ptr = nullptr;
      *scratch_bytes = 0;
      COHORT_CHECK_CUDA(cudaMalloc(scratch_ptr, bytes));
      *scratch_bytes = bytes;
    }
    return static_cast<float*>(*scratch_ptr);
  }
};

using Impl = kernels::LayerImpl<CudaExec>;

}  // namespace

#define COHORT_CUDA_EXEC CudaExec e{this, static_cast<cudaStream_t>(stream()), &scratch_, &scratch_bytes_}

void CudaDevice::conv2d_forward(const Conv2dArgs& a, const float* x, const float* w,
                                const float* bias, float* y) {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  COHORT_CUDA_EXEC;
  Impl::conv2d_forward(e, a, x, w, bias, y);
}
void CudaDevice::conv2d_backward_data(const Conv2dArgs& a, const float* dy, const float* w,
                                      float* dx) {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  COHORT_CUDA_EXEC;
  Impl::conv2d_backward_data(e, a, dy, w, dx);
}
void CudaDevice::conv2d_backward_filter(const Conv2dArgs& a, const float* x, const float* dy,
                                        float* dw, float* dbias) {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  COHORT_CUDA_EXEC;
  Impl::conv2d_backward_filter(e, a, x, dy, dw, dbias);
}
void CudaDevice::pool2d_forward(const Pool2dArgs& a, const float* x, float* y,
                                std::int32_t* argmax) {
  COHORT_CUDA_EXEC;
  Impl::pool2d_forward(e, a, x, y, argmax);
}
void CudaDevice::pool2d_backward(const Pool2dArgs& a, const float* dy, const std::int32_t* argmax,
                                 float* dx) {
  COHORT_CUDA_EXEC;
  Impl::pool2d_backward(e, a, dy, argmax, dx);
}
void CudaDevice::activation_forward(Activation f, float alpha, const float* x, float* y,
                                    std::size_t n) {
  COHORT_CUDA_EXEC;
  Impl::activation_forward(e, f, alpha, x, y, n);
}
void CudaDevice::activation_backward(Activation f, float alpha, const float* x, const float* y,
                                     const float* dy, float* dx, std::size_t n) {
  COHORT_CUDA_EXEC;
  Impl::activation_backward(e, f, alpha, x, y, dy, dx, n);
}
void CudaDevice::bias_add(const ChannelDims& d, const float* bias, float* y, Activation f,
                          float alpha) {
  COHORT_CUDA_EXEC;
  Impl::bias_add(e, d, bias, y, f, alpha);
}
void CudaDevice::bias_grad(const ChannelDims& d, const float* dy, float* dbias) {
  COHORT_CUDA_EXEC;
  Impl::bias_grad(e, d, dy, dbias);
}
void CudaDevice::softmax_forward(bool log, const ChannelDims& d, const float* x, float* y) {
  COHORT_CUDA_EXEC;
  Impl::softmax_forward(e, log, d, x, y);
}
void CudaDevice::softmax_backward(bool log, const ChannelDims& d, const float* y,
                                  const float* dy, float* dx) {
  COHORT_CUDA_EXEC;
  Impl::softmax_backward(e, log, d, y, dy, dx);
}
void CudaDevice::batch_norm_forward(const BatchNormArgs& a, const float* x, const float* gamma,
                                    const float* beta, float* running_mean, float* running_var,
                                    float* y, float* save_mean, float* save_invstd) {
  COHORT_CUDA_EXEC;
  Impl::batch_norm_forward(e, a, x, gamma, beta, running_mean, running_var, y, save_mean,
                           save_invstd);
}
void CudaDevice::batch_norm_backward(const BatchNormArgs& a, const float* x, const float* dy,
                                     const float* gamma, const float* save_mean,
                                     const float* save_invstd, float* dx, float* dgamma,
                                     float* dbeta) {
  COHORT_CUDA_EXEC;
  Impl::batch_norm_backward(e, a, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta);
}
void CudaDevice::layer_norm_forward(const LayerNormArgs& a, const float* x, const float* gamma,
                                    const float* beta, float* y, float* save_mean,
                                    float* save_rstd) {
  COHORT_CUDA_EXEC;
  Impl::layer_norm_forward(e, a, x, gamma, beta, y, save_mean, save_rstd);
}
void CudaDevice::layer_norm_backward(const LayerNormArgs& a, const float* x, const float* dy,
                                     const float* gamma, const float* save_mean,
                                     const float* save_rstd, float* dx, float* dgamma,
                                     float* dbeta) {
  COHORT_CUDA_EXEC;
  Impl::layer_norm_backward(e, a, x, dy, gamma, save_mean, save_rstd, dx, dgamma, dbeta);
}
void CudaDevice::dropout_forward(const DropoutArgs& a, const float* x, float* y, std::size_t n) {
  COHORT_CUDA_EXEC;
  Impl::dropout(e, a, x, y, n);
}
void CudaDevice::dropout_backward(const DropoutArgs& a, const float* dy, float* dx,
                                  std::size_t n) {
  COHORT_CUDA_EXEC;
  Impl::dropout(e, a, dy, dx, n);
}
void CudaDevice::nll_forward(const float* logp, const std::int64_t* target, std::size_t rows,
                             std::size_t classes, float* loss) {
  COHORT_CUDA_EXEC;
  Impl::nll_forward(e, logp, target, rows, classes, loss);
}
void CudaDevice::nll_backward(const std::int64_t* target, std::size_t rows, std::size_t classes,
                              float scale, float* dx) {
  COHORT_CUDA_EXEC;
  Impl::nll_backward(e, target, rows, classes, scale, dx);
}
void CudaDevice::cross_entropy_backward(const float* logp, const std::int64_t* target,
                                        std::size_t rows, std::size_t classes, float scale,
                                        float* dx) {
  COHORT_CUDA_EXEC;
  Impl::cross_entropy_backward(e, logp, target, rows, classes, scale, dx);
}

#undef COHORT_CUDA_EXEC

}  // namespace cohort::cuda
