// The host's activation span loops (backends/host/activation_spans.hpp) give the same bits for
// every instruction set the library builds them for (activation.cpp's target_clones: AVX-512, AVX2,
// baseline), forward and backward, every activation, over values that reach every branch of GELU's
// erf and exp and their special cases. Each set's build is run where this CPU has it; the baseline
// always; the baseline is also checked against the shared element functors. The values against
// the reference are the parity table's job.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cohort/core/op_options.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "common/ops/activation.hpp"
#include "isa_builds.hpp"

// n values uniform in [lo, hi) from cohort's Philox fill on the host: inputs only.
std::vector<float> uniform_values(std::int64_t n, float lo, float hi, std::uint64_t seed) {
  return cohort::Tensor::uniform({n}, lo, hi, seed, cohort::host_device()).to_vector<float>();
}

// Every activation the span loops serve.
const cohort::Activation kActivations[] = {
    cohort::Activation::identity, cohort::Activation::relu,    cohort::Activation::leaky_relu,
    cohort::Activation::gelu,     cohort::Activation::sigmoid, cohort::Activation::tanh};

using Span = void (*)(cohort::Activation, float, const float*, float*, const float*, float*,
                      std::int64_t);
using BiasSpans = void (*)(cohort::Activation, float, const float*, float*, std::int64_t,
                           std::int64_t);

TEST_CASE("host activations: the AVX-512, AVX2 and baseline builds agree bit for bit") {
  const auto isas = isa_builds::wide<Span>(activation_span_v3, activation_span_v4);
  // 100003 values: wide and narrow uniform ranges, then the special values; an odd count, so every
  // build runs its loop's tail too.
  std::vector<float> x = uniform_values(60000, -40.f, 40.f, 31);
  const std::vector<float> narrow = uniform_values(39990, -4.f, 4.f, 32);
  x.insert(x.end(), narrow.begin(), narrow.end());
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f,
                  88.7f, -88.7f, 104.0f, -104.0f, 3.0e38f, -3.0e38f, 1e-40f})
    x.push_back(v);
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const std::vector<float> dy = uniform_values(n, -1.f, 1.f, 33);
  int compared = 0;
  for (cohort::Activation f : kActivations) {
    CAPTURE(cohort::activation_name(f));
    auto run = [&](Span s) {
      std::vector<float> y(x.size()), dx(x.size());
      s(f, 0.1f, x.data(), y.data(), dy.data(), dx.data(), n);
      y.insert(y.end(), dx.begin(), dx.end());
      return y;
    };
    const std::vector<float> base = run(activation_span_base);
    // The shared families' element functors, as the other devices run them, give the same bits.
    std::vector<float> shared(x.size()), shared_dx(x.size());
    cohort::kernels::with_activation(f, [&](auto tag) {
      constexpr cohort::Activation F = decltype(tag)::value;
      const cohort::kernels::ActForward<F> fw{0.1f, x.data(), shared.data()};
      const cohort::kernels::ActBackward<F> bw{0.1f, x.data(), shared.data(), dy.data(),
                                               shared_dx.data()};
      for (std::int64_t i = 0; i < n; ++i) fw(i);
      for (std::int64_t i = 0; i < n; ++i) bw(i);
    });
    shared.insert(shared.end(), shared_dx.begin(), shared_dx.end());
    CHECK(std::memcmp(shared.data(), base.data(), base.size() * sizeof(float)) == 0);
    for (const auto& isa : isas) {
      CAPTURE(isa.name);
      if (!isa.here) continue;
      const std::vector<float> got = run(isa.run);
      CHECK(std::memcmp(got.data(), base.data(), base.size() * sizeof(float)) == 0);
      ++compared;
    }
  }
  if (compared == 0)  // on such a CPU the library runs the baseline build only
    WARN_MESSAGE(false, "no AVX2 or AVX-512 build runs on this CPU: nothing to compare with");
  MESSAGE("compared " << compared
                      << " (instruction set, activation) pairs with the baseline build");
}

using BiasSpans = void (*)(cohort::Activation, float, const float*, float*, std::int64_t,
                           std::int64_t);
void bias_act_spans_base(cohort::Activation, float, const float*, float*, std::int64_t,
                         std::int64_t);
void bias_act_spans_v3(cohort::Activation, float, const float*, float*, std::int64_t, std::int64_t);
void bias_act_spans_v4(cohort::Activation, float, const float*, float*, std::int64_t, std::int64_t);

TEST_CASE(
    "host bias_add: the AVX-512, AVX2 and baseline builds agree bit for bit, and with the "
    "shared items") {
  const std::int64_t rows = 37, n = 1001;  // odd lengths: every build's loop tail runs; rows < n
  const std::vector<float> y0 = uniform_values(rows * n, -6.f, 6.f, 34);
  const std::vector<float> bias = uniform_values(n, -1.f, 1.f, 35);
  const auto isas = isa_builds::wide<BiasSpans>(bias_act_spans_v3, bias_act_spans_v4);
  for (cohort::Activation f : kActivations) {
    CAPTURE(cohort::activation_name(f));
    std::vector<float> base = y0;
    bias_act_spans_base(f, 0.1f, bias.data(), base.data(), rows, n);
    // The shared items on the same data: each row as a plane with bias[r % n], then as a row.
    std::vector<float> shared = y0;
    cohort::kernels::with_activation(f, [&](auto tag) {
      constexpr cohort::Activation F = decltype(tag)::value;
      for (std::int64_t r = 0; r < rows; ++r) {
        // Plane r of a [1, n, n] view (rows < n): bias[r], elements [r * n, r * n + n).
        const cohort::kernels::BiasActPlane<F> plane{cohort::ChannelDims{1, n, n}, bias.data(),
                                                     shared.data(), 0.1f};
        plane(r);
        const cohort::kernels::BiasActRow<F> row{
            cohort::ChannelDims{rows, n, 1}, r % 2 ? bias.data() : nullptr, shared.data(), 0.1f};
        row(r);
      }
    });
    CHECK(std::memcmp(shared.data(), base.data(), base.size() * sizeof(float)) == 0);
    for (const auto& isa : isas) {
      CAPTURE(isa.name);
      if (!isa.here) continue;
      std::vector<float> got = y0;
      isa.run(f, 0.1f, bias.data(), got.data(), rows, n);
      CHECK(std::memcmp(got.data(), base.data(), base.size() * sizeof(float)) == 0);
    }
  }
}

using BiasGrad = void (*)(cohort::Activation, float, const float*, const float*, const float*,
                          float*, std::int64_t, std::int64_t, float*);

TEST_CASE(
    "host bias_act_backward: the AVX-512, AVX2 and baseline builds agree bit for bit, and with "
    "the shared items") {
  // 150 columns: two whole blocks of 64 and a partial one (and 9 blocks of the shared 16, the last
  // partial); values wide enough for every branch of GELU's backward.
  const std::int64_t rows = 45, n = 150;
  const std::vector<float> x = uniform_values(rows * n, -9.f, 9.f, 36);
  const std::vector<float> dy = uniform_values(rows * n, -1.f, 1.f, 37);
  const std::vector<float> db0 = uniform_values(n, -1.f, 1.f, 38);
  const auto isas = isa_builds::wide<BiasGrad>(bias_act_grad_v3, bias_act_grad_v4);
  for (cohort::Activation f : kActivations) {
    CAPTURE(cohort::activation_name(f));
    std::vector<float> y(x.size());
    activation_span_base(f, 0.1f, x.data(), y.data(), dy.data(),
                         std::vector<float>(x.size()).data(), rows * n);
    auto run = [&](BiasGrad g) {
      std::vector<float> dx(x.size()), db = db0;
      g(f, 0.1f, x.data(), y.data(), dy.data(), dx.data(), rows, n, db.data());
      dx.insert(dx.end(), db.begin(), db.end());
      return dx;
    };
    const std::vector<float> base = run(bias_act_grad_base);
    // The shared items (16 columns each), what the other devices run: the same bits.
    std::vector<float> shared(x.size()), shared_db = db0;
    cohort::kernels::with_activation(f, [&](auto tag) {
      constexpr cohort::Activation F = decltype(tag)::value;
      const cohort::kernels::BiasActGradColumns<F> item{
          cohort::calls::BiasActBackward{cohort::ChannelDims{rows, n, 1}, f, 0.1f, x.data(),
                                         y.data(), dy.data(), shared.data(), shared_db.data()}};
      for (std::int64_t i = 0; i < (n + 15) / 16; ++i) item(i);
    });
    shared.insert(shared.end(), shared_db.begin(), shared_db.end());
    CHECK(std::memcmp(shared.data(), base.data(), base.size() * sizeof(float)) == 0);
    for (const auto& isa : isas) {
      CAPTURE(isa.name);
      if (!isa.here) continue;
      const std::vector<float> got = run(isa.run);
      CHECK(std::memcmp(got.data(), base.data(), base.size() * sizeof(float)) == 0);
    }
  }
}
