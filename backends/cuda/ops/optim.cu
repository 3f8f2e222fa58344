// The optim family on the CUDA device (sgd_step adam_step adadelta_step rmsprop_step
// unscale_max_abs):
// backends/common/ops/optim.hpp on the Thrust executor (cuda_exec.cuh): no vendor library takes
// these ops.
#include "cuda_exec.cuh"

#include "common/ops/optim.hpp"

COHORT_CUDA_RUN_OP_DEF(SgdStep)
COHORT_CUDA_RUN_OP_DEF(AdamStep)
COHORT_CUDA_RUN_OP_DEF(AdadeltaStep)
COHORT_CUDA_RUN_OP_DEF(RmspropStep)
COHORT_CUDA_RUN_OP_DEF(UnscaleMaxAbs)
