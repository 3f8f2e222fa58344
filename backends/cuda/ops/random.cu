// The random family on the CUDA device (fill_uniform fill_normal dropout_forward dropout_backward):
// backends/common/ops/random.hpp on the Thrust executor (cuda_exec.cuh): no vendor library takes
// these ops.
#include "cuda_exec.cuh"

#include "common/ops/random.hpp"

COHORT_CUDA_RUN_OP_DEF(FillUniform)
COHORT_CUDA_RUN_OP_DEF(FillNormal)
COHORT_CUDA_RUN_OP_DEF(DropoutForward)
COHORT_CUDA_RUN_OP_DEF(DropoutBackward)
