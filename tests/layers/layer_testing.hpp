// Helpers shared by the layer tests: host tensors, error capture, and the finite-difference
// gradient checker.
//
// Why finite differences in float32 (and not a float64 path through every op): the layers run
// the f32 device ops users run; an f64 copy of every kernel would test a second implementation,
// not this one. Precision is recovered where it matters instead:
//   - the scalar probed is L = sum(y * r) for a fixed random r, accumulated in double on the host,
//     so its own rounding is ~1e-7 relative to |y|;
//   - central differences with h = 2e-3: truncation error O(h^2 f''') ~ 1e-5 for these O(1)-scaled
//     functions, round-off ~ 1e-7 |L| / h ~ 1e-4; the step used is the float32-rounded one
//     ((float)(x + h) - x), not the nominal h;
//   - inputs avoid kinks (|x| >= 0.05 for ReLU-like functions, pooling windows with distinct
//     values 0.05 apart) so a perturbation never crosses a non-differentiable point.
// Measured: every check agrees within 1e-4 absolute + 1e-4 relative except the residual blocks
// (two training-mode batch norms on 2-image batches: large curvature), which stay within 6e-4.
// The tolerance is 1e-3 absolute plus 2e-3 relative: a 1% error in a derivative formula fails it,
// and an indexing bug gives O(1) errors. Agreement with PyTorch to 1e-5 is the golden tests' job.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "testing.hpp"  // tests/common/

namespace lt {

using cohort::DType;
using cohort::Shape;
using cohort::Tensor;

inline cohort::Device& host() { return cohort::host_device(); }

inline Tensor uniform(const Shape& s, float lo, float hi, std::uint64_t seed) {
  return Tensor::uniform(s, lo, hi, seed, host());
}

// Uniform values with |x| >= margin (away from ReLU's kink at 0).
inline Tensor away_from_zero(const Shape& s, float margin, std::uint64_t seed) {
  std::vector<float> v = uniform(s, -1.0f, 1.0f, seed).to_vector<float>();
  for (float& x : v) x = x < 0 ? x - margin : x + margin;
  return Tensor::from_vector(v, s, host());
}

// Distinct values on a 0.05 grid (a shuffled ramp): pooling windows never tie.
inline Tensor distinct(const Shape& s, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = (static_cast<float>(i) - static_cast<float>(v.size()) / 2) * 0.05f;
  std::mt19937 gen(static_cast<unsigned>(seed));
  std::shuffle(v.begin(), v.end(), gen);
  return Tensor::from_vector(v, s, host());
}

inline Tensor labels(std::int64_t n, std::int64_t classes, std::uint64_t seed) {
  std::mt19937 gen(static_cast<unsigned>(seed));
  std::vector<std::int64_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<std::int64_t>(gen() % static_cast<unsigned>(classes));
  return Tensor::from_vector(t, Shape{n}, host());
}

inline double dot(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  REQUIRE(x.size() == y.size());
  double s = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i]) * y[i];
  return s;
}

// The message of the cohort::Error `fn` throws, or "<no error>" (tests/common/testing.hpp).
using cohort::testing::error_of;

struct FdOptions {
  double h = 2e-3;
  double atol = 1e-3;
  double rtol = 2e-3;
  std::size_t max_per_tensor = 48;  // elements probed per tensor (all when the tensor is smaller)
};

// Which elements of an n-element tensor to probe: all, or a spread-out deterministic sample.
inline std::vector<std::size_t> probe_indices(std::size_t n, std::size_t max, unsigned seed) {
  std::vector<std::size_t> idx(n);
  for (std::size_t i = 0; i < n; ++i) idx[i] = i;
  if (n <= max) return idx;
  std::mt19937 gen(seed);
  std::shuffle(idx.begin(), idx.end(), gen);
  idx.resize(max);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Central difference of `loss` w.r.t. element i of `t` (host memory, perturbed in place and
// restored), using the float32-rounded step actually taken.
inline double central_difference(Tensor& t, std::size_t i, double h,
                                 const std::function<double()>& loss) {
  float* p = t.data<float>();
  const float orig = p[i];
  const float up = static_cast<float>(orig + h), down = static_cast<float>(orig - h);
  p[i] = up;
  const double lp = loss();
  p[i] = down;
  const double lm = loss();
  p[i] = orig;
  return (lp - lm) / (static_cast<double>(up) - static_cast<double>(down));
}

inline void compare(const std::string& what, const std::vector<float>& analytic, std::size_t i,
                    double numeric, const FdOptions& o) {
  const double a = analytic[i];
  const double tol = o.atol + o.rtol * std::max(std::fabs(a), std::fabs(numeric));
  if (!(std::fabs(a - numeric) <= tol)) {
    FAIL_CHECK(what << "[" << i << "]: backward gives " << a << ", finite differences "
                    << numeric << " (tolerance " << tol << ")");
  }
}

// Checks module.backward (input gradient and every parameter gradient) against central
// differences of L = sum(forward(x) * r). `before_forward` runs before every forward (Dropout
// fixes its step there so every forward draws the same mask).
inline void check_module(cohort::nn::Module& m, Tensor x, const FdOptions& o = {},
                         const std::function<void()>& before_forward = {}) {
  auto fwd = [&]() {
    if (before_forward) before_forward();
    return m.forward(x);
  };
  const Tensor y0 = fwd();
  const Tensor r = uniform(y0.shape(), -1.0f, 1.0f, 777);
  m.zero_grad();
  const Tensor dx = m.backward(r);
  const std::vector<float> dxv = dx.to_vector<float>();
  std::vector<std::pair<cohort::NamedParameter, std::vector<float>>> pgrads;
  for (const auto& np : m.named_parameters())
    pgrads.push_back({np, np.param->grad.to_vector<float>()});

  auto loss = [&]() { return dot(fwd(), r); };
  for (std::size_t i : probe_indices(static_cast<std::size_t>(x.numel()), o.max_per_tensor, 1))
    compare(m.label() + " d/d input", dxv, i, central_difference(x, i, o.h, loss), o);
  for (auto& [np, g] : pgrads) {
    Tensor& v = np.param->value;
    for (std::size_t i : probe_indices(static_cast<std::size_t>(v.numel()), o.max_per_tensor, 2))
      compare(m.label() + " d/d " + np.name, g, i, central_difference(v, i, o.h, loss), o);
  }
}

// Checks loss.backward() against central differences of the loss value w.r.t. the input.
inline void check_loss(cohort::nn::Loss& loss, Tensor x, const Tensor& target,
                       const FdOptions& o = {}) {
  loss.forward(x, target);
  const std::vector<float> g = loss.backward().to_vector<float>();
  auto value = [&]() { return loss.forward(x, target).item(); };
  for (std::size_t i : probe_indices(static_cast<std::size_t>(x.numel()), o.max_per_tensor, 3))
    compare(loss.name() + " d/d input", g, i, central_difference(x, i, o.h, value), o);
}

}  // namespace lt
