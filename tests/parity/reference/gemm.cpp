// Reference of GEMM and batched GEMM: the textbook triple loop over row-major operands, with the
// BLAS convention that beta == 0 overwrites C (its old contents, NaN included, are never read).
#include "reference.hpp"

namespace parity_ref {

Vec gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
         const Vec& a, const Vec& b, double beta, const Vec& c0) {
  // A is stored [m, k] (or [k, m] when ta), B [k, n] (or [n, k] when tb).
  auto A = [&](std::int64_t i, std::int64_t p) { return ta ? a[p * m + i] : a[i * k + p]; };
  auto B = [&](std::int64_t p, std::int64_t j) { return tb ? b[j * k + p] : b[p * n + j]; };
  Vec c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += A(i, p) * B(p, j);
      c[i * n + j] = alpha * s + (beta == 0 ? 0.0 : beta * c0[i * n + j]);
    }
  return c;
}

Vec gemm_batched(std::int64_t batch, bool ta, bool tb, std::int64_t m, std::int64_t n,
                 std::int64_t k, double alpha, const Vec& a, const Vec& b, double beta,
                 const Vec& c0) {
  Vec c;
  for (std::int64_t i = 0; i < batch; ++i) {
    const auto part = [](const Vec& v, std::int64_t first, std::int64_t count) {
      return Vec(v.begin() + first * count, v.begin() + (first + 1) * count);
    };
    const Vec ci = gemm(ta, tb, m, n, k, alpha, part(a, i, m * k), part(b, i, k * n), beta,
                        part(c0, i, m * n));
    c.insert(c.end(), ci.begin(), ci.end());
  }
  return c;
}

}  // namespace parity_ref
