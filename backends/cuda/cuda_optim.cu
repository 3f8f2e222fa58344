// CUDA op table, optimizer block: each fused update is one grid-stride kernel applying the shared
// functor of cohort/detail/optim_kernels.hpp (the host backend runs the very same functors under
// Kokkos in host_optim.cpp). Built with --fmad=false like cuda_kernels.cu, so the results equal
// the host's bit for bit.
//
// The CudaDevice members of this block live here rather than in cuda_device.cpp so that the
// optimizer ops are one file; they only enqueue on the device's stream and never wait.
#include <cuda_runtime.h>

#include <cstdint>

#include "cohort/detail/optim_kernels.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"

namespace cohort::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;  // grid-stride loops cover any n (see cuda_kernels.cu)

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

template <class F>
__global__ void apply_kernel(F f, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    f(i);
}

// Enqueues f(i) for i in [0, n) on `stream`; launch errors (no kernel image for this GPU, bad
// configuration) throw here, faults inside the kernel surface at the next synchronising call.
template <class F>
void apply(const F& f, std::size_t n, void* stream) {
  if (n == 0) return;
  apply_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      f, static_cast<std::int64_t>(n));
  COHORT_CHECK_CUDA(cudaGetLastError());
}

}  // namespace

void CudaDevice::sgd_step(const SgdArgs& args, float* param, const float* grad,
                          float* momentum_buffer, std::size_t n) {
  apply(kernels::SgdUpdate{args, param, grad, momentum_buffer}, n, stream());
}

void CudaDevice::adam_step(const AdamArgs& args, float* param, const float* grad, float* exp_avg,
                           float* exp_avg_sq, float* max_exp_avg_sq, std::size_t n) {
  apply(kernels::AdamUpdate{args, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq}, n, stream());
}

void CudaDevice::adadelta_step(const AdadeltaArgs& args, float* param, const float* grad,
                               float* square_avg, float* acc_delta, std::size_t n) {
  apply(kernels::AdadeltaUpdate{args, param, grad, square_avg, acc_delta}, n, stream());
}

void CudaDevice::rmsprop_step(const RmspropArgs& args, float* param, const float* grad,
                              float* square_avg, float* grad_avg, float* momentum_buffer,
                              std::size_t n) {
  apply(kernels::RmspropUpdate{args, param, grad, square_avg, grad_avg, momentum_buffer}, n,
        stream());
}

}  // namespace cohort::cuda
