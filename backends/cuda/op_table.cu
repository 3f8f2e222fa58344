// The CUDA device's op table: Device::run() dispatches each op to its run_op (cuda_exec.cuh),
// defined in the file of the op's family, ops/<family>.cu: the shared family of
// backends/common/ops/ on the Thrust executor, or first the vendor library that takes the op (the
// route list below says which, and why). The vendor calls themselves sit in the file named after
// the op's family: conv2d.cpp, norm.cpp and softmax_loss.cpp (cuDNN), gemm.cpp and activation.cpp
// (cuBLAS); a case the vendor declines runs the family template on this device.
#include <thrust/system_error.h>

#include <cstdlib>

#include "common/ops/op_routes.hpp"
#include "cuda_exec.cuh"

namespace cohort::cuda {
namespace {

// Where each op runs (cohort-doctor --ops). Each entry names an overload above; the address checks
// below fail to compile when one is missing.
#define COHORT_CUDA_VENDOR_ROUTES(X)                                                               \
  X(conv2d_forward, Conv2dForward, "cuDNN (cuda/conv2d.cpp)",                                      \
    "f32 with bias + ReLU: one cudnnConvolutionBiasActivationForward call; other bias + "          \
    "activation in one shared pass over the batch; shared im2col + cuBLAS when no algorithm fits " \
    "the math modes and workspace, or a 32-bit descriptor limit")                                  \
  X(conv2d_backward_data, Conv2dBackwardData, "cuDNN (cuda/conv2d.cpp)",                           \
    "shared im2col + cuBLAS when declined")                                                        \
  X(conv2d_backward_filter, Conv2dBackwardFilter, "cuDNN (cuda/conv2d.cpp)",                       \
    "only deterministic algorithms under deterministic_algorithms(); shared when declined")        \
  X(gemm_batched, GemmBatched, "cuBLAS batched (cuda/gemm.cpp)",                                   \
    "cublasSgemmStridedBatched_64; k == 0 runs the shared beta scaling")                           \
  X(bias_grad, BiasGrad, "cuBLAS sgemv (cuda/activation.cpp)",                                     \
    "cublasSgemv_64 times a ones vector, for [N, F] only; NCHW runs the shared per-channel sum")   \
  X(bias_act_backward, BiasActBackward, "shared + cuBLAS sgemv (cuda/activation.cpp)",             \
    "for [N, F]: the shared element-wise backward, then bias_grad's sgemv over its dx; NCHW runs " \
    "the shared fused items")                                                                      \
  X(batch_norm_forward, BatchNormForward, "cuDNN (cuda/norm.cpp)",                                 \
    "training mode only; eval mode and declined cases run the shared kernels")                     \
  X(batch_norm_backward, BatchNormBackward, "cuDNN (cuda/norm.cpp)",                               \
    "training mode only; eval mode and declined cases run the shared kernels")                     \
  X(softmax_forward, SoftmaxForward, "cuDNN (cuda/softmax_loss.cpp)",                              \
    "shared kernels when a dimension exceeds cuDNN's 32-bit descriptors")                          \
  X(softmax_backward, SoftmaxBackward, "cuDNN (cuda/softmax_loss.cpp)",                            \
    "shared kernels when a dimension exceeds cuDNN's 32-bit descriptors")

}  // namespace

COHORT_DEFINE_OP_ROUTES(CudaExec, COHORT_CUDA_VENDOR_ROUTES, "cuda",
                        "shared kernels on Thrust (for_each_n, transform, fill_n with par_nosync "
                        "on the compute stream); their GEMMs through cuBLAS sgemm (cuda/gemm.cpp)")

// Every case of every op: the shared families cover them all, and a vendor's refusal falls back to
// them inside run().
bool CudaDevice::supports(const OpCall&) const { return true; }

void CudaDevice::run(const OpCall& call) {
  const memory::OpLabel label(op_name(op_of(call)));  // names the op in out-of-memory errors
  try {
    CudaExec e(*this);
    std::visit([&](const auto& c) { run_op(e, c); }, static_cast<const OpCall::Variant&>(call));
  } catch (const thrust::system_error& e) {  // a failed launch: report it as the other ops do
    (void)cudaGetLastError();
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "thrust", "cuda",
        ::cohort::detail::concat(op_name(op_of(call)), " on ", name(), ": ", e.what()));
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
                                    ::cohort::detail::concat(op_name(op_of(call)), " on ", name(),
                                                             " failed: ", detail::describe(st)));
    }
  }
}

}  // namespace cohort::cuda
