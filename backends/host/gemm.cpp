// The GEMM family on the host: every product through oneDNN's dnnl_sgemm, and the batched
// GEMM's split between threads. Why not OpenBLAS or KokkosBlas::gemm (which
// resolves to OpenBLAS): Debian's OpenBLAS 0.3.21 mis-detects this CPU family and runs a generic
// kernel at ~24 GFLOP/s unless OPENBLAS_CORETYPE is set before the library loads, which a library
// cannot do for its users; oneDNN detects the ISA itself (AVX-512/AMX) and reaches 140-200 GFLOP/s
// on one core. bench/gemm_bench prints both side by side.
#include <dnnl.h>
#include <omp.h>

#include "cohort/core/error.hpp"
#include "gemm.hpp"
#include "thread_governor.hpp"

namespace cohort::host {

void sgemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // op(A) op(B) is all zeros: C = beta C, with beta == 0 overwriting NaN
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j) {
        float& c = g.c[i * g.ldc + j];
        c = g.beta == 0.0f ? 0.0f : g.beta * c;
      }
    return;
  }
  adapt_threads_to_load();
  const dnnl_status_t st =
      dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n, g.k, g.alpha, g.a, g.lda,
                 g.b, g.ldb, g.beta, g.c, g.ldc);
  COHORT_CHECK_IN("host", st == dnnl_success, "dnnl_sgemm failed with status ",
                  static_cast<int>(st), " for m=", g.m, " n=", g.n, " k=", g.k,
                  " lda=", g.lda, " ldb=", g.ldb, " ldc=", g.ldc);
}

// Attention's per-head products: the batch split between the threads, each GEMM on one thread
// (oneDNN's sgemm runs sequentially inside a team), because the products are too small to split
// (the ViT's 65 x 65 x 32). Each GEMM is the same call as on one thread.
void sgemm_batched(const calls::GemmBatched& c, int threads) {
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    for (std::int64_t i = c.batch * t / n; i < c.batch * (t + 1) / n; ++i) {
      GemmArgs g = c;
      g.a = c.a + i * c.stride_a;
      g.b = c.b + i * c.stride_b;
      g.c = c.c + i * c.stride_c;
      sgemm(g);
    }
  }
}

}  // namespace cohort::host
