// Row-major cohort calls to column-major cuBLAS arguments (see cublas_gemm.hpp). The checks here
// restate, in the caller's row-major terms, what cuBLAS would otherwise reject with a bare
// CUBLAS_STATUS_INVALID_VALUE, so a bad call names its argument before anything is enqueued.
#include "cuda/seams/cublas_gemm.hpp"

#include "cohort/core/error.hpp"

namespace cohort::cuda::seams {
namespace {

constexpr const char* kBackend = "cuda";

int op_of(bool trans) { return trans ? kCublasOpT : kCublasOpN; }

void check_gemm(const char* what, const GemmArgs& g) {
  COHORT_CHECK_IN(kBackend, g.m >= 1 && g.n >= 1 && g.k >= 1, what,
                  ": m, n, k must be >= 1, got m=", g.m, " n=", g.n, " k=", g.k);
  COHORT_CHECK_IN(kBackend, g.a != nullptr, what, ": a is null");
  COHORT_CHECK_IN(kBackend, g.b != nullptr, what, ": b is null");
  COHORT_CHECK_IN(kBackend, g.c != nullptr, what, ": c is null");
  // Row strides of the matrices as stored: a is m x k (k x m when trans_a), b is k x n (n x k).
  const std::int64_t a_cols = g.trans_a ? g.m : g.k, b_cols = g.trans_b ? g.k : g.n;
  COHORT_CHECK_IN(kBackend, g.lda >= a_cols, what, ": lda ", g.lda, " < ", a_cols,
                  ", the row length of a", g.trans_a ? " (stored k x m)" : " (stored m x k)");
  COHORT_CHECK_IN(kBackend, g.ldb >= b_cols, what, ": ldb ", g.ldb, " < ", b_cols,
                  ", the row length of b", g.trans_b ? " (stored n x k)" : " (stored k x n)");
  COHORT_CHECK_IN(kBackend, g.ldc >= g.n, what, ": ldc ", g.ldc, " < n = ", g.n);
}

// Swaps operands and extents: the row-major C = op(a) op(b) read column-major is
// C^T = op(b)^T op(a)^T, and a row-major matrix with row stride ld is its transpose stored
// column-major with leading dimension ld, so each operand keeps its flag and ld.
CublasGemm swapped(const GemmArgs& g) {
  CublasGemm r;
  r.transa = op_of(g.trans_b);
  r.transb = op_of(g.trans_a);
  r.m = g.n;
  r.n = g.m;
  r.k = g.k;
  r.alpha = g.alpha;
  r.A = g.b;
  r.lda = g.ldb;
  r.B = g.a;
  r.ldb = g.lda;
  r.beta = g.beta;
  r.C = g.c;
  r.ldc = g.ldc;
  return r;
}

}  // namespace

CublasGemm cublas_gemm(const GemmArgs& g) {
  check_gemm("cuBLAS sgemm", g);
  return swapped(g);
}

CublasGemm cublas_gemm_batched(const calls::GemmBatched& g) {
  const char* what = "cuBLAS strided-batched sgemm";
  check_gemm(what, g);
  COHORT_CHECK_IN(kBackend, g.batch >= 1, what, ": batch must be >= 1, got ", g.batch);
  COHORT_CHECK_IN(kBackend, g.stride_a >= 0, what, ": stride_a ", g.stride_a, " < 0");
  COHORT_CHECK_IN(kBackend, g.stride_b >= 0, what, ": stride_b ", g.stride_b, " < 0");
  // The C blocks must not overlap (op_calls.hpp); cuBLAS leaves overlapping outputs undefined.
  const std::int64_t c_extent = (g.m - 1) * g.ldc + g.n;
  COHORT_CHECK_IN(kBackend, g.batch == 1 || g.stride_c >= c_extent, what, ": stride_c ",
                  g.stride_c, " < ", c_extent, " (the extent of one c block): the blocks overlap");
  CublasGemm r = swapped(g);
  r.stride_a = g.stride_b;
  r.stride_b = g.stride_a;
  r.stride_c = g.stride_c;
  r.batch = g.batch;
  return r;
}

CublasGemv cublas_bias_grad(const calls::BiasGrad& c, const float* ones) {
  const char* what = "cuBLAS sgemv (linear bias gradient)";
  COHORT_CHECK_IN(kBackend, c.d.inner == 1, what, ": inner must be 1, got ", c.d.inner);
  COHORT_CHECK_IN(kBackend, c.d.outer >= 1 && c.d.channels >= 1, what,
                  ": outer and channels must be >= 1, got outer=", c.d.outer, " channels=",
                  c.d.channels);
  COHORT_CHECK_IN(kBackend, c.dy != nullptr, what, ": dy is null");
  COHORT_CHECK_IN(kBackend, c.dbias != nullptr, what, ": dbias is null");
  COHORT_CHECK_IN(kBackend, ones != nullptr, what, ": ones is null");
  CublasGemv r;
  r.trans = kCublasOpN;
  r.m = c.d.channels;  // dy [outer, channels] row-major is [channels, outer] column-major
  r.n = c.d.outer;
  r.alpha = 1.0f;
  r.A = c.dy;
  r.lda = c.d.channels;
  r.x = ones;
  r.incx = 1;
  r.beta = 1.0f;  // dbias += : the gradient accumulates
  r.y = c.dbias;
  r.incy = 1;
  return r;
}

}  // namespace cohort::cuda::seams
