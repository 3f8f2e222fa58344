// The norm family on the CUDA device (batch_norm_forward batch_norm_backward layer_norm_forward
// layer_norm_backward): backends/common/ops/norm.hpp on the Thrust executor, and first cuDNN's
// batch norm in training mode (cuda/norm.cpp); layer norm runs the family templates.
#include "cuda_exec.cuh"

#include "common/ops/norm.hpp"

namespace cohort::cuda {

void run(CudaExec& e, const calls::BatchNormForward& c) {
  if (!e.cudnn().batch_norm_forward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::BatchNormBackward& c) {
  if (!e.cudnn().batch_norm_backward(c)) kernels::run(e, c);
}

}  // namespace cohort::cuda

COHORT_CUDA_RUN_OP_DEF(BatchNormForward)
COHORT_CUDA_RUN_OP_DEF(BatchNormBackward)
COHORT_CUDA_RUN_OP_DEF(LayerNormForward)
COHORT_CUDA_RUN_OP_DEF(LayerNormBackward)
