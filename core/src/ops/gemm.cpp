// GEMM front ends (gemm, gemm_batched, and matmul / bmm that allocate the result): the checks
// shared by both shapes, then one call of the op table (backends/common/ops/gemm.hpp).
#include "cohort/core/ops.hpp"

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/autocast.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

namespace {
// The checks shared by gemm (2-D operands, lead 0) and gemm_batched (3-D, lead 1: the batch
// extent first): dtypes, ranks, extents and devices. Returns the GEMM of one matrix, with
// m, n, k, leading dimensions, alpha and beta filled in.
GemmArgs checked_gemm(const char* op, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                      const Tensor& c, float alpha, float beta, int lead) {
  req_defined(op, "a", a);
  req_defined(op, "b", b);
  req_defined(op, "c", c);
  req_f32(op, "a", a);
  req_f32(op, "b", b);
  req_f32(op, "c", c);
  const std::size_t rank = static_cast<std::size_t>(lead) + 2;
  COHORT_CHECK(a.rank() == rank && b.rank() == rank && c.rank() == rank, op, ": expected ",
               lead ? "3-D tensors [batch, rows, cols]" : "2-D tensors", ", got a ",
               a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  if (lead)
    COHORT_CHECK(b.dim(0) == a.dim(0) && c.dim(0) == a.dim(0), op, ": batch extents differ: a ",
                 a.shape().str(), ", b ", b.shape().str(), ", c ", c.shape().str());
  const char* each = lead ? "[i]" : "";
  GemmArgs g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = trans_a ? a.dim(lead + 1) : a.dim(lead);
  g.k = trans_a ? a.dim(lead) : a.dim(lead + 1);
  const std::int64_t kb = trans_b ? b.dim(lead + 1) : b.dim(lead);
  g.n = trans_b ? b.dim(lead) : b.dim(lead + 1);
  COHORT_CHECK(g.k == kb, op, ": inner dimensions differ: op(a", each, ") is [", g.m, ", ", g.k,
               "] (a ", a.shape().str(), trans_a ? " transposed" : "", "), op(b", each, ") is [",
               kb, ", ", g.n, "] (b ", b.shape().str(), trans_b ? " transposed" : "", ")");
  COHORT_CHECK(c.dim(lead) == g.m && c.dim(lead + 1) == g.n, op, ": c is ", c.shape().str(),
               ", expected ", lead ? "[batch, " : "[", g.m, ", ", g.n, "]");
  req_same_device(op, a, "a", b, "b");
  req_same_device(op, a, "a", c, "c");
  g.alpha = alpha;
  g.beta = beta;
  g.lda = a.dim(lead + 1) > 0 ? a.dim(lead + 1) : 1;
  g.ldb = b.dim(lead + 1) > 0 ? b.dim(lead + 1) : 1;
  g.ldc = g.n;
  g.compute = autocast_dtype(a.device());
  return g;
}
}  // namespace

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c, float alpha,
          float beta) {
  const GemmArgs g = checked_gemm("gemm", a, trans_a, b, trans_b, c, alpha, beta, 0);
  if (g.m == 0 || g.n == 0) return;
  dispatch::run(a.device(), {&a, &b}, {&c}, [&](const dispatch::Operands& o) {
    calls::Gemm call;
    static_cast<GemmArgs&>(call) = g;
    call.a = o.in<float>(a);
    call.b = o.in<float>(b);
    call.c = o.out<float>(c);
    return call;
  });
}

void gemm_batched(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c,
                  float alpha, float beta) {
  const GemmArgs g = checked_gemm("gemm_batched", a, trans_a, b, trans_b, c, alpha, beta, 1);
  if (a.dim(0) == 0 || g.m == 0 || g.n == 0) return;
  dispatch::run(a.device(), {&a, &b}, {&c}, [&](const dispatch::Operands& o) {
    calls::GemmBatched call;
    static_cast<GemmArgs&>(call) = g;
    call.batch = a.dim(0);
    call.stride_a = a.dim(1) * a.dim(2);
    call.stride_b = b.dim(1) * b.dim(2);
    call.stride_c = g.m * g.n;
    call.a = o.in<float>(a);
    call.b = o.in<float>(b);
    call.c = o.out<float>(c);
    return call;
  });
}

Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  req_defined("bmm", "a", a);
  req_defined("bmm", "b", b);
  COHORT_CHECK(a.rank() == 3 && b.rank() == 3, "bmm: expected 3-D tensors, got a ",
               a.shape().str(), ", b ", b.shape().str());
  const std::int64_t m = trans_a ? a.dim(2) : a.dim(1);
  const std::int64_t n = trans_b ? b.dim(1) : b.dim(2);
  Tensor c = Tensor::empty({a.dim(0), m, n}, DType::f32, a.device());
  gemm_batched(a, trans_a, b, trans_b, c, 1.0f, 0.0f);
  return c;
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  req_defined("matmul", "a", a);
  req_defined("matmul", "b", b);
  COHORT_CHECK(a.rank() == 2 && b.rank() == 2, "matmul: expected 2-D tensors, got a ",
               a.shape().str(), ", b ", b.shape().str());
  const std::int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const std::int64_t n = trans_b ? b.dim(0) : b.dim(1);
  Tensor c = Tensor::empty({m, n}, DType::f32, a.device());
  gemm(a, trans_a, b, trans_b, c, 1.0f, 0.0f);
  return c;
}

}  // namespace cohort::ops
