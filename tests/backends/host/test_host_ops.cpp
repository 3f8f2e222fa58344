// Every host op against a naive loop on random data, at sizes 0, 1, odd and large, plus the
// argument errors of the tensor front end.
#include <doctest/doctest.h>

#include "common/testing.hpp"

using cohort::testing::error_of;

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"

using cohort::DType;
using cohort::Tensor;
namespace ops = cohort::ops;

namespace {
std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}
const std::int64_t kSizes[] = {0, 1, 7, 33, 257, 100003};
}  // namespace

TEST_CASE("element-wise ops match naive loops") {
  auto& dev = cohort::host_device();
  for (std::int64_t n : kSizes) {
    CAPTURE(n);
    const auto av = random_vector(static_cast<std::size_t>(n), 1);
    const auto bv = random_vector(static_cast<std::size_t>(n), 2);
    Tensor a = Tensor::from_vector(av, {n}, dev);
    Tensor b = Tensor::from_vector(bv, {n}, dev);
    Tensor out = Tensor::empty({n}, DType::f32, dev);

    ops::add(a, b, out);
    auto o = out.to_vector<float>();
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == av[i] + bv[i]);
    ops::sub(a, b, out);
    o = out.to_vector<float>();
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == av[i] - bv[i]);
    ops::mul(a, b, out);
    o = out.to_vector<float>();
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == av[i] * bv[i]);
    ops::scale(-0.5f, a, out);
    o = out.to_vector<float>();
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == -0.5f * av[i]);
    Tensor y = b.clone();
    ops::axpy(2.5f, a, y);
    o = y.to_vector<float>();
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == bv[i] + 2.5f * av[i]);
    // in place: out aliases an input
    ops::add(a, a, a);
    o = a.to_vector<float>();
    for (std::size_t i = 0; i < o.size(); ++i) REQUIRE(o[i] == av[i] + av[i]);
    ops::fill(out, 4.0);
    for (float x : out.to_vector<float>()) REQUIRE(x == 4.0f);
  }
}

TEST_CASE("row reductions and argmax match naive loops") {
  auto& dev = cohort::host_device();
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {1, 7}, {5, 1}, {33, 10}, {3, 100003}};
  for (auto [rows, cols] : shapes) {
    CAPTURE(rows);
    CAPTURE(cols);
    const auto xv = random_vector(static_cast<std::size_t>(rows * cols), 7);
    Tensor x = Tensor::from_vector(xv, {rows, cols}, dev);
    Tensor s = Tensor::empty({rows}, DType::f32, dev);
    Tensor m = Tensor::empty({rows}, DType::f32, dev);
    Tensor am = Tensor::empty({rows}, DType::i64, dev);
    ops::reduce_sum(x, s);
    ops::reduce_max(x, m);
    ops::argmax(x, am);
    const auto sv = s.to_vector<float>();
    const auto mv = m.to_vector<float>();
    const auto av = am.to_vector<std::int64_t>();
    for (std::int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      float mx = -std::numeric_limits<float>::infinity();
      std::int64_t arg = -1;
      for (std::int64_t c = 0; c < cols; ++c) {
        const float v = xv[static_cast<std::size_t>(r * cols + c)];
        ref += v;
        if (v > mx) mx = v, arg = c;
      }
      REQUIRE(sv[static_cast<std::size_t>(r)] == doctest::Approx(ref).epsilon(1e-6));
      REQUIRE(mv[static_cast<std::size_t>(r)] == mx);
      REQUIRE(av[static_cast<std::size_t>(r)] == arg);
    }
  }
  // Whole-tensor reductions, a 4-D tensor, hand-computed
  Tensor t = Tensor::from_vector<float>({1, -2, 3, 4, 5, -6, 7, 8}, {2, 1, 2, 2}, dev);
  CHECK(ops::sum(t) == 20.0f);
  CHECK(ops::max(t) == 8.0f);
  CHECK(ops::sum(Tensor::empty({0}, DType::f32, dev)) == 0.0f);
}

TEST_CASE("argmax ties pick the first index; NaN propagates like torch") {
  auto& dev = cohort::host_device();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({2, 5, 5, 1, 0, nan, 3, 9}, {2, 4}, dev);
  Tensor am = Tensor::empty({2}, DType::i64, dev);
  Tensor m = Tensor::empty({2}, DType::f32, dev);
  ops::argmax(x, am);
  ops::reduce_max(x, m);
  CHECK(am.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1});
  CHECK(m.item(0) == 5.0);
  CHECK(std::isnan(m.item(1)));
}

// max_all reduces in stages of 1024-element rows (so a GPU runs it in many threads); a max is
// exact, so every size, and where the largest, an inf or a NaN sits, gives the naive loop's answer.
TEST_CASE(
    "max_all and max_abs_all: every element's max in stages, NaN wins, the bad inputs named") {
  auto& dev = cohort::host_device();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (std::int64_t n :
       {1, 2, 1023, 1024, 1025, 3 * 1024 + 5, 1024 * 1024 + 1, 3 * 1024 * 1024 + 7}) {
    CAPTURE(n);
    auto xv = random_vector(static_cast<std::size_t>(n), 11);
    Tensor out = Tensor::empty({1}, DType::f32, dev);
    auto max_of = [&](const std::vector<float>& v) {
      ops::max_all(Tensor::from_vector(v, {n}, dev), out);
      return out.item();
    };
    const float naive = *std::max_element(xv.begin(), xv.end());
    CHECK(max_of(xv) == naive);
    for (std::size_t at :
         {std::size_t{0}, static_cast<std::size_t>(n / 2), static_cast<std::size_t>(n - 1)}) {
      CAPTURE(at);
      auto v = xv;
      v[at] = 1e30f;  // the largest in the first row, a middle row and the tail
      CHECK(max_of(v) == 1e30f);
      v[at] = inf;
      CHECK(max_of(v) == inf);
      v[at] = nan;
      CHECK(std::isnan(max_of(v)));
    }
    auto neg = xv;
    for (float& f : neg) f = -std::fabs(f) - 1.0f;
    neg[static_cast<std::size_t>(n - 1)] = -inf;
    CHECK(max_of(neg) == *std::max_element(neg.begin(), neg.end()));
  }
  // max_abs_all: the largest magnitude, negative or positive, NaN and inf as max_all.
  for (std::int64_t n : {1, 1025, 3 * 1024 + 5}) {
    CAPTURE(n);
    auto v = random_vector(static_cast<std::size_t>(n), 12);
    Tensor out = Tensor::empty({1}, DType::f32, dev);
    auto abs_of = [&](const std::vector<float>& w) {
      ops::max_abs_all(Tensor::from_vector(w, {n}, dev), out);
      return out.item();
    };
    float naive = 0;
    for (float f : v) naive = std::max(naive, std::fabs(f));
    CHECK(abs_of(v) == naive);
    v[static_cast<std::size_t>(n - 1)] = -1e30f;
    CHECK(abs_of(v) == 1e30f);
    v[0] = -inf;
    CHECK(abs_of(v) == inf);
    v[static_cast<std::size_t>(n / 2)] = nan;
    CHECK(std::isnan(abs_of(v)));
  }
  // A 3-D tensor is every element too; ops::max reads it back.
  Tensor t = Tensor::from_vector<float>({1, -2, 3, 9, 5, -6, 7, 8}, {2, 2, 2}, dev);
  CHECK(ops::max(t) == 9.0f);
  Tensor one = Tensor::empty({1}, DType::f32, dev), two = Tensor::empty({2}, DType::f32, dev);
  CHECK(error_of([&] {
          ops::max_all(Tensor::empty({0}, DType::f32, dev), one);
        }).find("max_all of an empty tensor") != std::string::npos);
  CHECK(error_of([&] { ops::max_all(t, two); }).find("max_all: out has 2 elements") !=
        std::string::npos);
}

TEST_CASE("op argument errors name the op, argument and values") {
  auto& dev = cohort::host_device();
  Tensor a = Tensor::zeros({2, 3}, DType::f32, dev);
  Tensor b = Tensor::zeros({3, 2}, DType::f32, dev);
  Tensor i = Tensor::zeros({2, 3}, DType::i32, dev);
  Tensor out = Tensor::zeros({2, 3}, DType::f32, dev);
  CHECK(error_of([&] { ops::add(a, b, out); })
            .find("add: shapes differ: 'a' is [2, 3], 'b' is [3, 2]") != std::string::npos);
  CHECK(error_of([&] { ops::mul(a, i, out); }).find("mul: argument 'b' must be f32, got i32") !=
        std::string::npos);
  CHECK(error_of([&] { ops::axpy(1.0f, a, b); }).find("axpy: shapes differ") != std::string::npos);
  Tensor bad_out = Tensor::zeros({3}, DType::f32, dev);
  CHECK(error_of([&] { ops::reduce_sum(a, bad_out); })
            .find("reduce_sum: out has 3 elements (shape [3]), expected 2 for x of shape [2, 3]") !=
        std::string::npos);
  Tensor f_out = Tensor::zeros({2}, DType::f32, dev);
  CHECK(error_of([&] { ops::argmax(a, f_out); }).find("argmax: out must be i64, got f32") !=
        std::string::npos);
  CHECK(error_of([&] { ops::max(Tensor::empty({0}, DType::f32, dev)); })
            .find("max of an empty tensor") != std::string::npos);
  Tensor undefined;
  CHECK(error_of([&] { ops::scale(2.0f, undefined, out); })
            .find("scale: argument 'x' is an undefined tensor") != std::string::npos);
}
