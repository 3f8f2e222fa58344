// The attention family on the CUDA device (attention_forward attention_backward):
// backends/common/ops/attention.hpp on the Thrust executor (cuda_exec.cuh): no vendor library takes
// these ops.
#include "cuda_exec.cuh"

#include "common/ops/attention.hpp"

COHORT_CUDA_RUN_OP_DEF(AttentionForward)
COHORT_CUDA_RUN_OP_DEF(AttentionBackward)
