// The CUDA device's op table: the shared implementation of backends/common/op_impl.hpp with one
// GPU thread per work item (one grid-stride kernel template runs every functor), GEMMs through
// this device's cuBLAS sgemm, scratch from the caching allocator. The host backend runs the
// very same functors under Kokkos (host_ops.cpp), so CPU-only CI tests this math.
//
// Correctness first: work items are rows, planes or channels (what the host needs), which keeps a
// GPU busy for training-sized batches but is not tuned; vendor kernels (cuDNN convolutions, batch
// norm, softmax) belong here as run() overloads for their call types, ahead of the shared ones.
// Built with --fmad=false so the element-wise results equal the host's bit for bit.
//
// Ops enqueue on the compute stream and return without waiting.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/caching_allocator.hpp"
#include "common/op_impl.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"

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

}  // namespace

bool CudaDevice::supports(const OpCall& call) const { return kernels::shared_supports(call); }

void CudaDevice::run(const OpCall& call) {
  const memory::OpLabel label(op_name(op_of(call)));  // names the op in out-of-memory errors
  {
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
