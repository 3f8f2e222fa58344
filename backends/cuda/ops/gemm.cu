// The gemm family on the CUDA device (gemm gemm_batched): backends/common/ops/gemm.hpp on the
// Thrust executor, and first cuBLAS's batched GEMM (cuda/gemm.cpp; k == 0 is the family's beta
// scaling); gemm itself runs the family template, whose GEMM is CudaExec::gemm (cuBLAS sgemm, or
// the 16-bit copies under autocast).
#include "cuda_exec.cuh"

#include "common/ops/gemm.hpp"

namespace cohort::cuda {

// An empty product (m, n or batch 0: attention with head size 0 calls it) has nothing to write,
// as in the family's run(Gemm); cuBLAS's argument check (seams/cublas_gemm.cpp) would refuse it.
void run(CudaExec& e, const calls::GemmBatched& c) {
  if (c.m == 0 || c.n == 0 || c.batch == 0) return;
  if (c.k == 0) return kernels::run(e, c);
  e.gemm_batched(c);
}

}  // namespace cohort::cuda

COHORT_CUDA_RUN_OP_DEF(Gemm)
COHORT_CUDA_RUN_OP_DEF(GemmBatched)
