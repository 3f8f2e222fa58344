// The reshape family on the CUDA device (permute slice_copy): backends/common/ops/reshape.hpp on
// the Thrust executor (cuda_exec.cuh): no vendor library takes these ops.
#include "cuda_exec.cuh"

#include "common/ops/reshape.hpp"

COHORT_CUDA_RUN_OP_DEF(Permute)
COHORT_CUDA_RUN_OP_DEF(SliceCopy)
