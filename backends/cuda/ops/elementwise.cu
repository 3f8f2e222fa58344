// The elementwise family on the CUDA device (fill cast add sub mul axpy scale clamp):
// backends/common/ops/elementwise.hpp on the Thrust executor (cuda_exec.cuh): no vendor library
// takes these ops.
#include "cuda_exec.cuh"

#include "common/ops/elementwise.hpp"

COHORT_CUDA_RUN_OP_DEF(Fill)
COHORT_CUDA_RUN_OP_DEF(Cast)
COHORT_CUDA_RUN_OP_DEF(Add)
COHORT_CUDA_RUN_OP_DEF(Sub)
COHORT_CUDA_RUN_OP_DEF(Mul)
COHORT_CUDA_RUN_OP_DEF(Axpy)
COHORT_CUDA_RUN_OP_DEF(Scale)
COHORT_CUDA_RUN_OP_DEF(Clamp)
