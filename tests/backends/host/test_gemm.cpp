// GEMM against a double-precision triple loop: all four transpose combinations, odd sizes
// (1, 7, 33, 257) in every position, alpha/beta, beta == 0 over NaN, k == 0, and shape errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"

using cohort::DType;
using cohort::Tensor;

namespace {
std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// C = alpha op(A) op(B) + beta C in double, row-major.
std::vector<double> reference(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                              float alpha, const std::vector<float>& a, const std::vector<float>& b,
                              float beta, const std::vector<float>& c) {
  std::vector<double> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[static_cast<std::size_t>(p * m + i)] : a[static_cast<std::size_t>(i * k + p)];
        const double y = tb ? b[static_cast<std::size_t>(j * k + p)] : b[static_cast<std::size_t>(p * n + j)];
        acc += x * y;
      }
      out[static_cast<std::size_t>(i * n + j)] =
          alpha * acc + (beta == 0.0f ? 0.0 : beta * c[static_cast<std::size_t>(i * n + j)]);
    }
  return out;
}

void check_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                float beta) {
  auto& dev = cohort::host_device();
  const auto av = random_vector(static_cast<std::size_t>(m * k), static_cast<unsigned>(m * 7 + k));
  const auto bv = random_vector(static_cast<std::size_t>(k * n), static_cast<unsigned>(n * 13 + k));
  const auto cv = random_vector(static_cast<std::size_t>(m * n), 99);
  Tensor a = Tensor::from_vector(av, ta ? cohort::Shape{k, m} : cohort::Shape{m, k}, dev);
  Tensor b = Tensor::from_vector(bv, tb ? cohort::Shape{n, k} : cohort::Shape{k, n}, dev);
  Tensor c = Tensor::from_vector(cv, {m, n}, dev);
  cohort::ops::gemm(a, ta, b, tb, c, alpha, beta);
  const auto got = c.to_vector<float>();
  const auto ref = reference(ta, tb, m, n, k, alpha, av, bv, beta, cv);
  // f32 accumulation of k products of magnitude <= 1: error grows ~ sqrt(k) * eps.
  const double tol = 1e-5 * (1.0 + std::sqrt(static_cast<double>(k)));
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - ref[i]));
  CAPTURE(ta);
  CAPTURE(tb);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  REQUIRE(worst <= tol);
}
}  // namespace

TEST_CASE("gemm: all transposes and odd sizes against a double reference") {
  const std::int64_t sizes[] = {1, 7, 33, 257};
  for (int t = 0; t < 4; ++t)
    for (auto m : sizes)
      for (auto n : sizes)
        for (auto k : sizes) check_gemm(t & 1, t & 2, m, n, k, 1.0f, 0.0f);
}

TEST_CASE("gemm: alpha and beta") {
  for (int t = 0; t < 4; ++t) {
    check_gemm(t & 1, t & 2, 33, 7, 257, 0.5f, 1.0f);
    check_gemm(t & 1, t & 2, 64, 128, 32, -2.0f, 0.25f);
  }
}

TEST_CASE("gemm: beta == 0 ignores NaN in C; k == 0 gives beta C") {
  auto& dev = cohort::host_device();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = Tensor::full({2, 3}, 1.0, DType::f32, dev);
  Tensor b = Tensor::full({3, 2}, 2.0, DType::f32, dev);
  Tensor c = Tensor::full({2, 2}, nan, DType::f32, dev);
  cohort::ops::gemm(a, false, b, false, c, 1.0f, 0.0f);
  CHECK(c.to_vector<float>() == std::vector<float>(4, 6.0f));

  Tensor a0 = Tensor::empty({2, 0}, DType::f32, dev);
  Tensor b0 = Tensor::empty({0, 2}, DType::f32, dev);
  Tensor c0 = Tensor::full({2, 2}, 3.0, DType::f32, dev);
  cohort::ops::gemm(a0, false, b0, false, c0, 1.0f, 0.5f);
  CHECK(c0.to_vector<float>() == std::vector<float>(4, 1.5f));
  Tensor cn = Tensor::full({2, 2}, nan, DType::f32, dev);
  cohort::ops::gemm(a0, false, b0, false, cn, 1.0f, 0.0f);
  CHECK(cn.to_vector<float>() == std::vector<float>(4, 0.0f));
}

TEST_CASE("gemm: matmul and shape errors") {
  auto& dev = cohort::host_device();
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2}, dev);
  CHECK(cohort::ops::matmul(a, b).to_vector<float>() == std::vector<float>{4, 5, 10, 11});
  // a^T a is 3x3: hand computed
  CHECK(cohort::ops::matmul(a, a, true, false).to_vector<float>() ==
        std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45});
  std::string err;
  try {
    cohort::ops::matmul(a, a);
  } catch (const cohort::Error& e) {
    err = e.what();
  }
  CHECK(err.find("gemm: inner dimensions differ: op(a) is [2, 3] (a [2, 3]), op(b) is [2, 3] (b [2, 3])") !=
        std::string::npos);
  Tensor v = Tensor::zeros({6}, DType::f32, dev);
  err.clear();
  try {
    cohort::ops::matmul(a, v);
  } catch (const cohort::Error& e) {
    err = e.what();
  }
  CHECK(err.find("matmul: expected 2-D tensors, got a [2, 3], b [6]") != std::string::npos);
}

TEST_CASE("gemm_batched: hand-computed batch, transposes, and shape errors") {
  auto& dev = cohort::host_device();
  // Batch 0: [[1, 2], [3, 4]] @ I = itself; batch 1: [[1, 2], [3, 4]] @ [[0, 1], [1, 0]] swaps
  // the columns.
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 1, 2, 3, 4}, {2, 2, 2}, dev);
  Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 0, 1, 1, 0}, {2, 2, 2}, dev);
  CHECK(cohort::ops::bmm(a, b).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 2, 1, 4, 3});
  // a^T per batch, alpha 2, beta 1 over ones.
  Tensor c = Tensor::full({2, 2, 2}, 1.0, DType::f32, dev);
  cohort::ops::gemm_batched(a, true, b, false, c, 2.0f, 1.0f);
  CHECK(c.to_vector<float>() == std::vector<float>{3, 7, 5, 9, 7, 3, 9, 5});
  // Every batch entry equals the 2-D gemm of its slices, for all transposes.
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor x = Tensor::uniform(ta ? cohort::Shape{3, 7, 5} : cohort::Shape{3, 5, 7}, -1, 1, 5, dev);
    Tensor y = Tensor::uniform(tb ? cohort::Shape{3, 4, 7} : cohort::Shape{3, 7, 4}, -1, 1, 6, dev);
    const std::vector<float> got = cohort::ops::bmm(x, y, ta, tb).to_vector<float>();
    const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
    for (int i = 0; i < 3; ++i) {
      Tensor xi = Tensor::from_vector<float>({xv.begin() + i * 35, xv.begin() + (i + 1) * 35},
                                             ta ? cohort::Shape{7, 5} : cohort::Shape{5, 7}, dev);
      Tensor yi = Tensor::from_vector<float>({yv.begin() + i * 28, yv.begin() + (i + 1) * 28},
                                             tb ? cohort::Shape{4, 7} : cohort::Shape{7, 4}, dev);
      const std::vector<float> want = cohort::ops::matmul(xi, yi, ta, tb).to_vector<float>();
      CHECK(std::vector<float>(got.begin() + i * 20, got.begin() + (i + 1) * 20) == want);
    }
  }
  std::string err;
  try {
    cohort::ops::bmm(a, Tensor::zeros({3, 2, 2}, DType::f32, dev));
  } catch (const cohort::Error& e) {
    err = e.what();
  }
  CHECK(err.find("gemm_batched: batch extents differ: a [2, 2, 2], b [3, 2, 2]") != std::string::npos);
  err.clear();
  try {
    cohort::ops::bmm(a, Tensor::zeros({2, 3, 2}, DType::f32, dev));
  } catch (const cohort::Error& e) {
    err = e.what();
  }
  CHECK(err.find("gemm_batched: inner dimensions differ") != std::string::npos);
}
