// The reduce family on the CUDA device (reduce_sum reduce_sum_sq reduce_max argmax):
// backends/common/ops/reduce.hpp on the Thrust executor (cuda_exec.cuh): no vendor library takes
// these ops.
#include "cuda_exec.cuh"

#include "common/ops/reduce.hpp"

COHORT_CUDA_RUN_OP_DEF(ReduceSum)
COHORT_CUDA_RUN_OP_DEF(ReduceSumSq)
COHORT_CUDA_RUN_OP_DEF(ReduceMax)
COHORT_CUDA_RUN_OP_DEF(Argmax)
