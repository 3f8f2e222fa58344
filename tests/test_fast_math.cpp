// The host's float exp and erf (backends/common/fast_math.hpp) against double-precision std::exp
// and std::erf, over dense sweeps and the special values, asserting the bounds its contract
// states; and their determinism: a loop the compiler vectorises gives the same bits as one call
// per element that it cannot (a function pointer read through a volatile), for the functions,
// for the GELU / sigmoid / softmax functors that use them, and for the host device's ops.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"
#include "common/fast_math.hpp"
#include "common/ops/activation.hpp"
#include "common/ops/softmax_loss.hpp"

using cohort::Activation;
using cohort::Tensor;
namespace kernels = cohort::kernels;
namespace ops = cohort::ops;

namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kDenormMin = std::numeric_limits<float>::denorm_min();  // 2^-149

// x = lo + i * step for i = 0 .. (hi - lo) / step, computed in double and rounded once.
std::vector<float> sweep(double lo, double hi, double step) {
  std::vector<float> v;
  const auto n = static_cast<std::int64_t>(std::floor((hi - lo) / step + 0.5));
  v.reserve(static_cast<std::size_t>(n + 1));
  for (std::int64_t i = 0; i <= n; ++i)
    v.push_back(static_cast<float>(lo + static_cast<double>(i) * step));
  return v;
}

// Inputs for the determinism checks: the sweep, the special values, and random floats of every
// magnitude, an odd count so that a vectorised loop also runs its remainder.
std::vector<float> mixed_inputs() {
  std::vector<float> v = sweep(-12.0, 12.0, 1.0e-3);
  const float special[] = {0.0f,     -0.0f,     kInf,      -kInf,     kNaN,     -kNaN,
                           FLT_MAX,  -FLT_MAX,  FLT_MIN,   -FLT_MIN,  kDenormMin, -kDenormMin,
                           88.7228f, 88.7229f,  -87.34f,   -103.9f,   -104.5f,  1.0f,
                           -1.0f,    0.999999f, 1.000001f, 3.92f,     4.0f,     -4.0f};
  v.insert(v.end(), std::begin(special), std::end(special));
  std::mt19937 gen(7);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 100001; ++i) v.push_back(from_bits(any(gen)));
  if (v.size() % 2 == 0) v.push_back(0.5f);
  return v;
}

// One call per element that the compiler can neither inline nor vectorise.
float exp_one(float x) { return kernels::fast_exp(x); }
float erf_one(float x) { return kernels::fast_erf(x); }
float (*volatile exp_per_element)(float) = exp_one;
float (*volatile erf_per_element)(float) = erf_one;

// Loops the compiler vectorises (the header's point; -fopt-info-vec reports both at -O3).
void exp_loop(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = kernels::fast_exp(x[i]);
}
void erf_loop(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = kernels::fast_erf(x[i]);
}

// Equal bits, every NaN counted equal to every NaN.
void require_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                       const std::vector<float>& in) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (bits(got[i]) != bits(want[i])) {
      CAPTURE(i);
      CAPTURE(in[i % in.size()]);
      CAPTURE(got[i]);
      CAPTURE(want[i]);
      REQUIRE(bits(got[i]) == bits(want[i]));
    }
  }
}

}  // namespace

TEST_CASE("fast_exp: within 1 ulp of exp over the float range, inf / 0 / NaN as exp") {
  // Every 1e-4 over [-10, 10], then every 1e-3 over [-110, 90]: the overflow threshold, the
  // subnormal results and the underflow to 0.
  std::vector<float> xs = sweep(-10.0, 10.0, 1.0e-4);
  const std::vector<float> wide = sweep(-110.0, 90.0, 1.0e-3);
  xs.insert(xs.end(), wide.begin(), wide.end());
  double max_rel = 0.0, max_ulp = 0.0, max_sub = 0.0;
  std::int64_t normal = 0, subnormal = 0, overflow = 0, zero = 0;
  for (float x : xs) {
    const double ref = std::exp(static_cast<double>(x));
    const float rounded = static_cast<float>(ref);
    const float y = kernels::fast_exp(x);
    CAPTURE(x);
    CAPTURE(y);
    if (std::isinf(rounded)) {  // exp(x) rounds to inf in float
      ++overflow;
      REQUIRE(y == kInf);
    } else if (rounded >= FLT_MIN) {
      ++normal;
      const double rel = std::fabs(y - ref) / ref;
      const double ulp = std::ldexp(1.0, std::ilogb(rounded) - 23);
      max_rel = std::max(max_rel, rel);
      max_ulp = std::max(max_ulp, std::fabs(y - ref) / ulp);
      REQUIRE(rel <= 8.2e-8);
    } else {  // subnormal or 0: within one step of 2^-149
      ++(rounded == 0.0f ? zero : subnormal);
      const double steps = std::fabs(y - ref) / 0x1p-149;
      max_sub = std::max(max_sub, steps);
      REQUIRE(steps <= 1.0);
      REQUIRE(y >= 0.0f);
    }
  }
  MESSAGE("fast_exp over ", xs.size(), " points: max relative error ", max_rel, " (", max_ulp,
          " ulp) on ", normal, " normal results; max error ", max_sub, " x 2^-149 on ", subnormal,
          " subnormal results; ", overflow, " overflows, ", zero, " zeros");
  CHECK(max_ulp < 1.0);
  CHECK(subnormal > 1000);
  CHECK(overflow > 1000);
  CHECK(zero > 1000);

  // Special values.
  CHECK(bits(kernels::fast_exp(0.0f)) == bits(1.0f));
  CHECK(bits(kernels::fast_exp(-0.0f)) == bits(1.0f));
  CHECK(kernels::fast_exp(kInf) == kInf);
  CHECK(bits(kernels::fast_exp(-kInf)) == bits(0.0f));
  CHECK(std::isnan(kernels::fast_exp(kNaN)));
  CHECK(std::isnan(kernels::fast_exp(-kNaN)));
  CHECK(kernels::fast_exp(FLT_MAX) == kInf);
  CHECK(bits(kernels::fast_exp(-FLT_MAX)) == bits(0.0f));
  CHECK(kernels::fast_exp(kDenormMin) == 1.0f);  // subnormal inputs
  CHECK(kernels::fast_exp(-kDenormMin) == 1.0f);
  CHECK(kernels::fast_exp(1.0f) == doctest::Approx(2.718281828).epsilon(1e-7));
  // Around overflow: ln(FLT_MAX) = 88.7228391...; the float just below the threshold is finite,
  // the one above it overflows, as with a correctly rounded exp.
  CHECK(std::isfinite(kernels::fast_exp(88.72283f)));
  CHECK(kernels::fast_exp(88.72283f) > 3.4e38f);
  CHECK(kernels::fast_exp(88.72284f) == kInf);
  CHECK(kernels::fast_exp(100.0f) == kInf);
  // Around underflow: exp(-103.97) is 2^-150, half the smallest subnormal.
  CHECK(kernels::fast_exp(-87.5f) > 0.0f);
  CHECK(kernels::fast_exp(-87.5f) < FLT_MIN);  // a subnormal result
  CHECK(kernels::fast_exp(-103.0f) > 0.0f);
  CHECK(bits(kernels::fast_exp(-104.0f)) == bits(0.0f));
  CHECK(bits(kernels::fast_exp(-1000.0f)) == bits(0.0f));
}

TEST_CASE("fast_erf: within 1.15e-7 of erf, odd, +-1 at +-inf, NaN as erf") {
  const std::vector<float> xs = sweep(-10.0, 10.0, 1.0e-4);
  double max_abs = 0.0, max_ulp = 0.0;
  for (float x : xs) {
    const double ref = std::erf(static_cast<double>(x));
    const float y = kernels::fast_erf(x);
    CAPTURE(x);
    CAPTURE(y);
    const double err = std::fabs(y - ref);
    max_abs = std::max(max_abs, err);
    const float rounded = static_cast<float>(ref);
    const double ulp = std::fabs(rounded) == 1.0f
                           ? 0x1p-24
                           : std::ldexp(1.0, std::max(std::ilogb(rounded), -126) - 23);
    max_ulp = std::max(max_ulp, err / ulp);
    REQUIRE(err <= 1.15e-7);
    REQUIRE(bits(kernels::fast_erf(-x)) == (bits(y) ^ 0x80000000u));  // odd, bit for bit
    REQUIRE(std::fabs(y) <= 1.0f);
  }
  MESSAGE("fast_erf over ", xs.size(), " points: max absolute error ", max_abs, " (", max_ulp,
          " ulp)");
  CHECK(max_ulp <= 1.93);

  // Small arguments keep their relative accuracy (erf(x) ~ 2x / sqrt(pi)).
  for (float x : {1.0e-3f, 1.0e-10f, 1.0e-30f, FLT_MIN}) {
    CAPTURE(x);
    const double ref = std::erf(static_cast<double>(x));
    CHECK(std::fabs(kernels::fast_erf(x) - ref) <= 2.0 * ref * FLT_EPSILON);
  }
  CHECK(kernels::fast_erf(kDenormMin) > 0.0f);  // subnormal input, subnormal result
  CHECK(kernels::fast_erf(kDenormMin) < FLT_MIN);
  // Special values.
  CHECK(bits(kernels::fast_erf(0.0f)) == bits(0.0f));
  CHECK(bits(kernels::fast_erf(-0.0f)) == bits(-0.0f));
  CHECK(kernels::fast_erf(kInf) == 1.0f);
  CHECK(kernels::fast_erf(-kInf) == -1.0f);
  CHECK(kernels::fast_erf(FLT_MAX) == 1.0f);
  CHECK(kernels::fast_erf(-FLT_MAX) == -1.0f);
  CHECK(kernels::fast_erf(4.0f) == 1.0f);
  CHECK(kernels::fast_erf(10.0f) == 1.0f);
  CHECK(std::isnan(kernels::fast_erf(kNaN)));
  CHECK(std::isnan(kernels::fast_erf(-kNaN)));
}

TEST_CASE("fast_exp / fast_erf: a vectorised loop gives the bits of one call per element") {
  const std::vector<float> in = mixed_inputs();
  const auto n = static_cast<std::int64_t>(in.size());
  std::vector<float> vec(in.size()), one(in.size());
  exp_loop(in.data(), vec.data(), n);
  for (std::size_t i = 0; i < in.size(); ++i) one[i] = exp_per_element(in[i]);
  require_same_bits(vec, one, in);
  erf_loop(in.data(), vec.data(), n);
  for (std::size_t i = 0; i < in.size(); ++i) one[i] = erf_per_element(in[i]);
  require_same_bits(vec, one, in);
}

TEST_CASE("GELU, sigmoid, bias_add + GELU, softmax on the host: the bits of calls per element") {
  auto& dev = cohort::host_device();
  // Finite inputs over the range where the functions vary, plus the extremes; odd length.
  std::vector<float> xv = sweep(-12.0, 12.0, 1.0e-3);
  for (float s : {0.0f, -0.0f, 100.0f, -100.0f, FLT_MAX, -FLT_MAX, kDenormMin}) xv.push_back(s);
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> dyv(xv.size());
  for (auto& d : dyv) d = normal(gen);
  const auto n = static_cast<std::int64_t>(xv.size());
  const Tensor x = Tensor::from_vector(xv, {n}, dev);
  const Tensor dy = Tensor::from_vector(dyv, {n}, dev);

  // The functors' per-element functions, called through volatile pointers.
  static float (*volatile gelu_f)(float) = [](float v) {
    return kernels::Act<Activation::gelu>::f(v, 0.0f);
  };
  static float (*volatile gelu_df)(float, float) = [](float v, float d) {
    return kernels::Act<Activation::gelu>::df(v, 0.0f, d, 0.0f);
  };
  static float (*volatile sigmoid_f)(float) = [](float v) {
    return kernels::Act<Activation::sigmoid>::f(v, 0.0f);
  };

  Tensor y = Tensor::empty({n}, cohort::DType::f32, dev);
  Tensor dx = Tensor::empty({n}, cohort::DType::f32, dev);
  std::vector<float> want(xv.size());

  ops::activation_forward(Activation::gelu, 0.0f, x, y);
  for (std::size_t i = 0; i < xv.size(); ++i) want[i] = gelu_f(xv[i]);
  require_same_bits(y.to_vector<float>(), want, xv);
  ops::activation_backward(Activation::gelu, 0.0f, x, y, dy, dx);
  for (std::size_t i = 0; i < xv.size(); ++i) want[i] = gelu_df(xv[i], dyv[i]);
  require_same_bits(dx.to_vector<float>(), want, xv);
  ops::activation_forward(Activation::sigmoid, 0.0f, x, y);
  for (std::size_t i = 0; i < xv.size(); ++i) want[i] = sigmoid_f(xv[i]);
  require_same_bits(y.to_vector<float>(), want, xv);

  // bias_add with a fused GELU / sigmoid along rows (a linear layer's [rows, features] output).
  {
    const std::int64_t rows = 37, features = 515;
    std::vector<float> yv(static_cast<std::size_t>(rows * features)), bv(features);
    for (auto& v : yv) v = normal(gen);
    for (auto& v : bv) v = normal(gen);
    const Tensor bias = Tensor::from_vector(bv, {features}, dev);
    for (Activation f : {Activation::gelu, Activation::sigmoid}) {
      Tensor t = Tensor::from_vector(yv, {rows, features}, dev);
      ops::bias_add(bias, t, -1, f);
      std::vector<float> w(yv.size());
      for (std::size_t i = 0; i < yv.size(); ++i) {
        const float v = yv[i] + bv[i % static_cast<std::size_t>(features)];
        w[i] = f == Activation::gelu ? gelu_f(v) : sigmoid_f(v);
      }
      require_same_bits(t.to_vector<float>(), w, yv);
    }
  }

  // Softmax and log-softmax forward and backward, along the last axis (rows of 65, the ViT's
  // attention rows: the host's unit-stride loops) and along axis 1 of [7, 65, 9] (strided),
  // out of place and in place, against the kernels' arithmetic written out with one exp call per
  // element: the same maximum, the same double sums in the same order.
  struct Layout {
    std::int64_t outer, channels, inner;
    int dim;
  };
  for (const Layout& l : {Layout{301, 65, 1, -1}, Layout{7, 65, 9, 1}}) {
    CAPTURE(l.inner);
    const std::int64_t count = l.outer * l.channels * l.inner;
    const cohort::Shape shape = l.inner == 1 ? cohort::Shape{l.outer, l.channels}
                                             : cohort::Shape{l.outer, l.channels, l.inner};
    std::vector<float> sv(static_cast<std::size_t>(count)), sdy(sv.size());
    for (auto& v : sv) v = normal(gen);
    for (auto& v : sdy) v = normal(gen);
    sv[5] = -kInf;  // a masked entry
    const Tensor s = Tensor::from_vector(sv, shape, dev);
    const Tensor sd = Tensor::from_vector(sdy, shape, dev);
    Tensor sy = Tensor::empty(shape, cohort::DType::f32, dev);
    Tensor sdx = Tensor::empty(shape, cohort::DType::f32, dev);
    for (bool log : {false, true}) {
      CAPTURE(log);
      std::vector<float> wy(sv.size()), wdx(sv.size());
      for (std::int64_t o = 0; o < l.outer; ++o) {
        for (std::int64_t i = 0; i < l.inner; ++i) {
          const std::int64_t base = o * l.channels * l.inner + i, st = l.inner;
          float m = -kInf;
          for (std::int64_t c = 0; c < l.channels; ++c) {
            const float v = sv[base + c * st];
            if (v > m || v != v) m = v;
          }
          double sum = 0.0;
          if (log) {
            for (std::int64_t c = 0; c < l.channels; ++c)
              sum += exp_per_element(sv[base + c * st] - m);
            const float lse = m + static_cast<float>(std::log(sum));
            for (std::int64_t c = 0; c < l.channels; ++c)
              wy[base + c * st] = sv[base + c * st] - lse;
          } else {
            for (std::int64_t c = 0; c < l.channels; ++c) {
              const float e = exp_per_element(sv[base + c * st] - m);
              wy[base + c * st] = e;
              sum += e;
            }
            const float inv = static_cast<float>(1.0 / sum);
            for (std::int64_t c = 0; c < l.channels; ++c) wy[base + c * st] *= inv;
          }
          double g = 0.0;
          if (log) {
            for (std::int64_t c = 0; c < l.channels; ++c) g += sdy[base + c * st];
            const float gf = static_cast<float>(g);
            for (std::int64_t c = 0; c < l.channels; ++c)
              wdx[base + c * st] = sdy[base + c * st] - exp_per_element(wy[base + c * st]) * gf;
          } else {
            for (std::int64_t c = 0; c < l.channels; ++c)
              g += static_cast<double>(sdy[base + c * st]) * wy[base + c * st];
            const float gf = static_cast<float>(g);
            for (std::int64_t c = 0; c < l.channels; ++c)
              wdx[base + c * st] = wy[base + c * st] * (sdy[base + c * st] - gf);
          }
        }
      }
      ops::softmax_forward(log, s, sy, l.dim);
      require_same_bits(sy.to_vector<float>(), wy, sv);
      Tensor in_place = s.clone();
      ops::softmax_forward(log, in_place, in_place, l.dim);
      require_same_bits(in_place.to_vector<float>(), wy, sv);
      ops::softmax_backward(log, sy, sd, sdx, l.dim);
      require_same_bits(sdx.to_vector<float>(), wdx, sv);
    }
  }
}
