// Which pointers the nccl backend takes: device memory of this rank's GPU, or managed memory.
// Host memory (pageable or pinned) is refused with an error saying so rather than staged through
// the GPU: a silent copy would hide a slow path from the caller, and DDP already picks a host-
// staged reducer when a communicator cannot use the parameters' memory (capabilities()).
// cudaPointerGetAttributes answers cudaMemoryTypeUnregistered for ordinary host memory.
#include <sstream>

#include "nccl/context.hpp"

namespace cohort::comm::nccl::detail {

void check_device_pointer(const Context& ctx, const OpDesc& op, const char* arg, const void* p,
                          std::size_t bytes) {
  if (bytes == 0) return;
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) (void)cudaGetLastError();
  std::ostringstream what;
  what << op.str() << ": " << arg << " buffer " << p << " (" << bytes << " bytes) ";
  COHORT_CHECK_IN(kName, e == cudaSuccess, what.str(), "is not a pointer CUDA knows (",
                  ::cohort::detail::describe_cuda(e), "); the nccl backend takes GPU memory only");
  COHORT_CHECK_IN(kName, a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged,
                  what.str(), "is host memory",
                  a.type == cudaMemoryTypeHost ? " (pinned)" : "",
                  "; the nccl backend takes GPU memory only (capabilities().host_memory is "
                  "false): copy the data to cuda:", ctx.device,
                  " first, or use a host backend (--comm shm or --comm ucx)");
  COHORT_CHECK_IN(kName, a.type == cudaMemoryTypeManaged || a.device == ctx.device, what.str(),
                  "is on cuda:", a.device, " but this rank's communicator uses cuda:", ctx.device);
}

}  // namespace cohort::comm::nccl::detail
