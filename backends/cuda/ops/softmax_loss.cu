// The softmax_loss family on the CUDA device (softmax_forward softmax_backward nll_forward
// nll_backward cross_entropy_backward): backends/common/ops/softmax_loss.hpp on the Thrust
// executor, and first cuDNN's softmax (cuda/softmax_loss.cpp); the losses run the family templates.
#include "cuda_exec.cuh"

#include "common/ops/softmax_loss.hpp"

namespace cohort::cuda {

void run(CudaExec& e, const calls::SoftmaxForward& c) {
  if (!e.cudnn().softmax_forward(c)) kernels::run(e, c);
}
void run(CudaExec& e, const calls::SoftmaxBackward& c) {
  if (!e.cudnn().softmax_backward(c)) kernels::run(e, c);
}

}  // namespace cohort::cuda

COHORT_CUDA_RUN_OP_DEF(SoftmaxForward)
COHORT_CUDA_RUN_OP_DEF(SoftmaxBackward)
COHORT_CUDA_RUN_OP_DEF(NllForward)
COHORT_CUDA_RUN_OP_DEF(NllBackward)
COHORT_CUDA_RUN_OP_DEF(CrossEntropyBackward)
