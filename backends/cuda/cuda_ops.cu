// The CUDA device's op table: the shared implementation of backends/common/op_impl.hpp with one
// GPU thread per work item (one grid-stride kernel template runs every functor), GEMMs through
// this device's cuBLAS sgemm (the linear bias gradient: its sgemv), scratch from the caching
// allocator. The host backend runs the very same functors under Kokkos (host_ops.cpp), so CPU-only
// CI tests this math.
//
// Vendor kernels come first: convolutions over the whole batch, training batch norm and softmax go
// to cuDNN (cudnn_ops.cpp) through the run() overloads below, which argument-dependent lookup
// prefers to the shared templates; a case cuDNN does not cover runs on the shared kernels. Work
// items of the shared kernels are rows, planes or channels (what the host needs), which keeps a GPU
// busy for training-sized batches but is not tuned. Built with --fmad=false so the element-wise
// results equal the host's bit for bit.
//
// Ops enqueue on the compute stream and return without waiting. Maps, fills, row reductions and
// optimizer steps go through Thrust (common/thrust_ops.hpp) with thrust::cuda::par_nosync on that
// stream: none of its algorithms used there synchronises or allocates temporary storage.
#include <cuda_runtime.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/caching_allocator.hpp"
#include "common/op_impl.hpp"
#include "common/thrust_ops.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cudnn_ops.hpp"
#include "cuda/seams/cublas_gemm.hpp"

namespace cohort::cuda {
namespace {

constexpr unsigned kThreads = 256;
// Grid-stride loops cover any count; 4096 blocks of 256 threads fill an H100 several times over,
// and the cap keeps grid sizes far from the launch limits.
constexpr std::int64_t kMaxBlocks = 4096;

template <class F>
__global__ void for_each_kernel(F f, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x)
    f(i);
}

class CudaExec {
 public:
  explicit CudaExec(CudaDevice& device)
      : device_(device), stream_(static_cast<cudaStream_t>(device.stream())) {}
  // Scratch goes back to the cache in stream order: kernels still reading it finish first.
  ~CudaExec() {
    for (const auto& [p, bytes] : scratch_) device_.deallocate(p, bytes);
  }
  CudaExec(const CudaExec&) = delete;
  CudaExec& operator=(const CudaExec&) = delete;

  // Launch errors (bad configuration, no kernel image for this GPU) throw here; faults inside a
  // kernel surface at the next synchronising call (COHORT_CUDA_SYNC=1 pins them to their op).
  template <class F>
  void for_each(const char*, std::int64_t count, const F& f) const {
    if (count <= 0) return;
    const std::int64_t blocks = (count + kThreads - 1) / kThreads;
    for_each_kernel<<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads,
                      0, stream_>>>(f, count);
    COHORT_CHECK_CUDA(cudaGetLastError());
  }
  void gemm(const GemmArgs& g) const { device_.gemm(g); }
  void gemm_batched(const calls::GemmBatched& g) const { device_.gemm_batched(g); }
  void gemv(const seams::CublasGemv& v) const { device_.gemv(v); }
  // The device's cached vector of at least n ones, filled here (on the compute stream, before
  // whatever reads it) when the device had to allocate it.
  const float* ones(std::int64_t n) const {
    std::int64_t fill = 0;
    float* p = device_.ones_block(n, &fill);
    if (fill > 0) for_each("cohort::ones", fill, kernels::FillItem<float>{p, 1.0f});
    return p;
  }
  Cudnn& cudnn() const { return device_.cudnn(); }
  float* scratch(std::size_t floats) {
    const std::size_t bytes = floats * sizeof(float);
    void* p = device_.allocate(bytes);
    scratch_.emplace_back(p, bytes);
    return static_cast<float*>(p);
  }

 private:
  CudaDevice& device_;
  cudaStream_t stream_;
  std::vector<std::pair<void*, std::size_t>> scratch_;
};

// ---- cuBLAS's batched GEMM (k == 0 is the shared path's beta scaling) ----

void run(CudaExec& e, const calls::GemmBatched& c) {
  if (c.k == 0) return kernels::run(e, c);
  e.gemm_batched(c);
}

// ---- cuBLAS's sgemv for the linear bias gradient ----
// dbias += dy^T ones: one vendor call instead of the shared kernel's one thread per 16 columns,
// each summing a whole column serially (GPU review G2). The sum runs in float in cuBLAS's order,
// not the shared kernel's double; the parity row's tolerance covers the difference. Other layouts
// (inner > 1: the convolution's bias gradient) stay on the shared kernel.
void run(CudaExec& e, const calls::BiasGrad& c) {
  if (c.d.inner != 1) return kernels::run(e, c);
  if (c.d.outer == 0 || c.d.channels == 0) return;  // dbias += nothing
  e.gemv(seams::cublas_bias_grad(c, e.ones(c.d.outer)));
}

// ---- cuDNN's ops (found by argument-dependent lookup from kernels::run_call) ----

void run(CudaExec& e, const calls::Conv2dForward& c) {
  if (!e.cudnn().conv_forward(c)) return kernels::run(e, c);
  kernels::conv2d_bias_act_pass(e, c.a, c.bias, c.y);  // one pass over y for the whole batch
}
void run(CudaExec& e, const calls::Conv2dBackwardData& c) {
  if (!e.cudnn().conv_backward_data(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::Conv2dBackwardFilter& c) {
  if (!e.cudnn().conv_backward_filter(c)) return kernels::run(e, c);
  // dbias += sum dy through cuDNN's reduction: the shared pass is one thread per channel, each
  // summing N * P * Q values (GPU review G2); it stays as the fallback.
  if (c.dbias && !e.cudnn().conv_backward_bias(c)) kernels::conv2d_bias_grad_pass(e, c);
}
void run(CudaExec& e, const calls::BatchNormForward& c) {
  if (!e.cudnn().batch_norm_forward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::BatchNormBackward& c) {
  if (!e.cudnn().batch_norm_backward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::SoftmaxForward& c) {
  if (!e.cudnn().softmax_forward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::SoftmaxBackward& c) {
  if (!e.cudnn().softmax_backward(c)) kernels::run(e, c);
}

}  // namespace

bool CudaDevice::supports(const OpCall& call) const { return kernels::shared_supports(call); }

void CudaDevice::run(const OpCall& call) {
  const memory::OpLabel label(op_name(op_of(call)));  // names the op in out-of-memory errors
  // Thrust for what it covers (maps, fills, row reductions, optimizer steps: none of them a cuDNN or
  // cuBLAS op), then run_call, where the cuDNN / cuBLAS overloads above win over the shared
  // grid-stride kernels.
  bool done = false;
  try {
    done = thrust_ops::run_if_covered(
        thrust::cuda::par_nosync.on(static_cast<cudaStream_t>(stream())), call);
  } catch (const thrust::system_error& e) {  // a failed launch: report it as the other ops do
    (void)cudaGetLastError();
    ::cohort::detail::throw_error(__FILE__, __LINE__, "thrust", "cuda",
                                  ::cohort::detail::concat(op_name(op_of(call)), " on ", name(),
                                                           ": ", e.what()));
  }
  if (!done) {
    CudaExec e(*this);
    kernels::run_call(e, call);
  }
  static const bool sync_each = [] {
    const char* v = std::getenv("COHORT_CUDA_SYNC");
    return v != nullptr && v[0] == '1';
  }();
  if (sync_each) {
    const cudaError_t st = cudaStreamSynchronize(static_cast<cudaStream_t>(stream()));
    if (st != cudaSuccess) {
      (void)cudaGetLastError();
      ::cohort::detail::throw_error(__FILE__, __LINE__, "cudaStreamSynchronize", "cuda",
                                    ::cohort::detail::concat(op_name(op_of(call)), " on ",
                                                             name(), " failed: ",
                                                             detail::describe(st)));
    }
  }
}

}  // namespace cohort::cuda
