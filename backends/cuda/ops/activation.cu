// The activation family on the CUDA device (activation_forward activation_backward bias_add
// bias_grad bias_act_backward): backends/common/ops/activation.hpp on the Thrust executor, and
// first cuBLAS's sgemv for the linear bias gradient (cuda/activation.cpp).
#include "cuda_exec.cuh"

#include "common/ops/activation.hpp"

namespace cohort::cuda {

// dbias += dy^T ones: one vendor call instead of the shared kernel's one thread per 16 columns,
// each summing a whole column serially (GPU review G2). The sum runs in float in cuBLAS's order,
// not the shared kernel's double; the parity row's tolerance covers the difference. Other layouts
// (inner > 1: the convolution's bias gradient) stay on the shared kernel.
void run(CudaExec& e, const calls::BiasGrad& c) {
  if (c.d.inner != 1) return kernels::run(e, c);
  if (c.d.outer == 0 || c.d.channels == 0) return;  // dbias += nothing
  e.gemv(seams::cublas_bias_grad(c, e.ones(c.d.outer)));
}
// The fused activation backward + bias gradient on [N, F]: the shared item is one thread per 16
// columns summing serially (the cost BiasGrad's route above avoids), so on the GPU it is two
// launches again: the element-wise backward, then the same sgemv over the dx it wrote.
void run(CudaExec& e, const calls::BiasActBackward& c) {
  if (c.d.inner != 1) return kernels::run(e, c);
  const std::size_t n = static_cast<std::size_t>(c.d.outer * c.d.channels);
  kernels::run(e, calls::ActivationBackward{c.f, c.alpha, c.x, c.y, c.dy, c.dx, n});
  run(e, calls::BiasGrad{c.d, c.dx, c.dbias});
}

}  // namespace cohort::cuda

COHORT_CUDA_RUN_OP_DEF(ActivationForward)
COHORT_CUDA_RUN_OP_DEF(ActivationBackward)
COHORT_CUDA_RUN_OP_DEF(BiasAdd)
COHORT_CUDA_RUN_OP_DEF(BiasGrad)
COHORT_CUDA_RUN_OP_DEF(BiasActBackward)
