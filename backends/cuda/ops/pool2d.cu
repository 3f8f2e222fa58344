// The pool2d family on the CUDA device (pool2d_forward pool2d_backward):
// backends/common/ops/pool2d.hpp on the Thrust executor (cuda_exec.cuh): no vendor library takes
// these ops.
#include "cuda_exec.cuh"

#include "common/ops/pool2d.hpp"

COHORT_CUDA_RUN_OP_DEF(Pool2dForward)
COHORT_CUDA_RUN_OP_DEF(Pool2dBackward)
