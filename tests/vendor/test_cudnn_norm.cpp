// The cuDNN batch-norm and softmax seams (backends/cuda/seams/cudnn_norm.hpp, cudnn_softmax.hpp)
// on the CPU: SPATIAL batch norm in training (saved and running statistics, backward) and CHANNEL
// softmax and log-softmax, executed as cuDNN documents them and compared with the host device
// (cudnn_reference.hpp says how); what cuDNN does not cover is declined.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "cuda/seams/cudnn_norm.hpp"
#include "cuda/seams/cudnn_softmax.hpp"
#include "cudnn_reference.hpp"

TEST_SUITE_BEGIN("cudnn");

using namespace cohort;
using namespace cohort::cuda::seams;
using namespace cohort::test_cudnn;

// ---- batch normalisation (cudnn_ops.h, SPATIAL) ----

namespace {

struct BnState {
  Vec y, save_mean, save_inv, running_mean, running_var;
};

// cudnnBatchNormalizationForwardTraining from the seam's values.
void ref_bn_forward(const BnForwardValues& v, const Vec& x, const Vec* scale, const Vec* bias,
                    BnState& st) {
  REQUIRE(v.covered);
  REQUIRE(v.mode == ce::kBatchNormSpatial);
  REQUIRE(v.x.w == 1);
  REQUIRE(v.bn.n == 1);
  REQUIRE(v.bn.h == 1);
  REQUIRE(v.bn.w == 1);
  REQUIRE(v.bn.c == v.x.c);
  const int n = v.x.n, c = v.x.c, inner = v.x.h;
  const double m = double(n) * inner;
  REQUIRE(static_cast<std::int64_t>(m) == v.m);
  st.y.resize(x.size(), NAN);
  st.save_mean.assign(c, NAN);
  st.save_inv.assign(c, NAN);
  for (int ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) sum += x[(std::size_t(b) * c + ch) * inner + i];
    const double mean = sum / m;
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const double d = x[(std::size_t(b) * c + ch) * inner + i] - mean;
        sq += d * d;
      }
    const double var = sq / m;  // biased: what normalises
    const double inv = 1.0 / std::sqrt(var + v.epsilon);
    const double g = v.unit_scale ? 1.0 : (*scale)[ch], be = v.zero_bias ? 0.0 : (*bias)[ch];
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const std::size_t k = (std::size_t(b) * c + ch) * inner + i;
        st.y[k] = blend(v.alpha, g * (x[k] - mean) * inv + be, v.beta, st.y[k]);
      }
    st.save_mean[ch] = static_cast<float>(mean);
    st.save_inv[ch] = static_cast<float>(inv);
    if (v.update_running) {
      const double f = v.exponential_average_factor;
      const double var_run = v.running_var_unbiased ? var * m / (m - 1) : var;
      st.running_mean[ch] = static_cast<float>(mean * f + st.running_mean[ch] * (1 - f));
      st.running_var[ch] = static_cast<float>(var_run * f + st.running_var[ch] * (1 - f));
    }
  }
}

// cudnnBatchNormalizationBackward from the seam's values and the saved statistics.
void ref_bn_backward(const BnBackwardValues& v, const Vec& x, const Vec& dy, const Vec* scale,
                     const Vec& save_mean, const Vec& save_inv, Vec& dx, Vec& dgamma, Vec& dbeta) {
  REQUIRE(v.covered);
  REQUIRE(v.mode == ce::kBatchNormSpatial);
  REQUIRE(v.bn.c == v.x.c);
  const int n = v.x.n, c = v.x.c, inner = v.x.h;
  const double m = double(n) * inner;
  for (int ch = 0; ch < c; ++ch) {
    const double mean = save_mean[ch], inv = save_inv[ch];
    const double g = v.unit_scale ? 1.0 : (*scale)[ch];
    double sdy = 0, sdyx = 0;
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const std::size_t k = (std::size_t(b) * c + ch) * inner + i;
        sdy += dy[k];
        sdyx += dy[k] * (x[k] - mean) * inv;
      }
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < inner; ++i) {
        const std::size_t k = (std::size_t(b) * c + ch) * inner + i;
        const double xhat = (x[k] - mean) * inv;
        const double d = g * inv / m * (m * dy[k] - sdy - xhat * sdyx);
        dx[k] = blend(v.alpha_data, d, v.beta_data, dx[k]);
      }
    dgamma[ch] = blend(v.alpha_param, sdyx, v.beta_param, dgamma[ch]);
    dbeta[ch] = blend(v.alpha_param, sdy, v.beta_param, dbeta[ch]);
  }
}

struct BnCase {
  const char* name;
  Shape x;
  float eps, momentum;
  bool affine, running;
};

}  // namespace

TEST_CASE(
    "cuDNN batch-norm seam: forward training values (saved and running statistics) match the "
    "host") {
  const BnCase cases[] = {
      {"parity: [4,3,5,5] eps 1e-5 momentum 0.1", {4, 3, 5, 5}, 1e-5f, 0.1f, true, true},
      {"momentum 0.7 (factor, not 1 - factor)", {2, 4, 3, 3}, 1e-3f, 0.7f, true, true},
      {"no affine, no running stats", {3, 2, 4, 2}, 1e-5f, 0.1f, false, false},
      {"[8, 5] features (inner 1)", {8, 5}, 1e-5f, 0.1f, true, true},
      {"M = 2: Bessel's factor 2", {2, 3}, 1e-5f, 0.5f, true, true},
  };
  for (const BnCase& bc : cases) {
    CAPTURE(bc.name);
    const std::int64_t c = bc.x[1];
    BatchNormArgs a;
    a.n = bc.x[0];
    a.c = c;
    a.inner = bc.x.numel() / (a.n * c);
    a.eps = bc.eps;
    a.momentum = bc.momentum;
    a.training = true;
    float dummy = 0;
    calls::BatchNormForward call{a,
                                 nullptr,
                                 bc.affine ? &dummy : nullptr,
                                 bc.affine ? &dummy : nullptr,
                                 bc.running ? &dummy : nullptr,
                                 bc.running ? &dummy : nullptr,
                                 &dummy,
                                 &dummy,
                                 &dummy};
    const BnForwardValues v = bn_forward_values(call);
    REQUIRE(v.covered);
    CHECK(v.x.n == a.n);
    CHECK(v.x.c == c);
    CHECK(v.x.h == a.inner);
    CHECK(v.epsilon == doctest::Approx(bc.eps).epsilon(1e-12));
    CHECK(v.exponential_average_factor == doctest::Approx(bc.momentum).epsilon(1e-12));
    CHECK(v.update_running == bc.running);
    CHECK(v.unit_scale == !bc.affine);
    CHECK(v.zero_bias == !bc.affine);

    const Tensor x = uni(bc.x, 50, -2.0f, 3.0f), g = uni({c}, 53), b = uni({c}, 54);
    const Tensor rm0 = uni({c}, 51), rv0 = uni({c}, 52, 0.5f, 2.0f);
    Tensor y = Tensor::zeros(bc.x, DType::f32, host_device());
    Tensor sm = Tensor::zeros({c}, DType::f32, host_device());
    Tensor si = Tensor::zeros({c}, DType::f32, host_device());
    Tensor rm = Tensor::from_vector(values(rm0), {c}, host_device());
    Tensor rv = Tensor::from_vector(values(rv0), {c}, host_device());
    ops::batch_norm_forward(x, bc.affine ? &g : nullptr, bc.affine ? &b : nullptr,
                            bc.running ? &rm : nullptr, bc.running ? &rv : nullptr, y, sm, si,
                            bc.eps, bc.momentum, true);

    BnState st;
    st.running_mean = values(rm0);
    st.running_var = values(rv0);
    const Vec gv = values(g), bv = values(b);
    ref_bn_forward(v, values(x), &gv, &bv, st);
    CHECK(rel_diff(st.y, values(y)) <= 1e-5);
    CHECK(rel_diff(st.save_mean, values(sm)) <= 1e-6);
    CHECK(rel_diff(st.save_inv, values(si)) <= 1e-5);
    // Without running statistics cuDNN gets null pointers and the host leaves them alone.
    CHECK(rel_diff(st.running_mean, values(rm)) <= 1e-6);
    CHECK(rel_diff(st.running_var, values(rv)) <= 1e-6);
  }
}

TEST_CASE(
    "cuDNN batch-norm seam: backward values (dx overwritten, dgamma/dbeta accumulated) match the "
    "host") {
  for (bool affine : {true, false}) {
    CAPTURE(affine);
    const Shape xs{4, 3, 5, 5};
    BatchNormArgs a;
    a.n = 4;
    a.c = 3;
    a.inner = 25;
    float dummy = 0;
    const Tensor x = uni(xs, 50), dy = uni(xs, 57), g = uni({3}, 53), b = uni({3}, 54);
    Tensor y = Tensor::zeros(xs, DType::f32, host_device());
    Tensor sm = Tensor::zeros({3}, DType::f32, host_device());
    Tensor si = Tensor::zeros({3}, DType::f32, host_device());
    ops::batch_norm_forward(x, affine ? &g : nullptr, affine ? &b : nullptr, nullptr, nullptr, y,
                            sm, si, 1e-5f, 0.1f, true);
    const Tensor dg0 = uni({3}, 55), db0 = uni({3}, 56);
    Tensor dx = Tensor::zeros(xs, DType::f32, host_device());
    Tensor dg = Tensor::from_vector(values(dg0), {3}, host_device());
    Tensor db = Tensor::from_vector(values(db0), {3}, host_device());
    ops::batch_norm_backward(x, dy, affine ? &g : nullptr, sm, si, &dx, &dg, &db, true);

    const BnBackwardValues v = bn_backward_values(calls::BatchNormBackward{
        a, nullptr, nullptr, affine ? &dummy : nullptr, &dummy, &dummy, &dummy, &dummy, &dummy});
    CHECK(v.alpha_data == 1.0f);
    CHECK(v.beta_data == 0.0f);
    CHECK(v.alpha_param == 1.0f);
    CHECK(v.beta_param == 1.0f);
    CHECK(v.unit_scale == !affine);
    CHECK_FALSE(v.dx_scratch);
    CHECK_FALSE(v.dgamma_scratch);
    CHECK_FALSE(v.dbeta_scratch);
    Vec gdx(x.numel(), NAN), gdg = values(dg0), gdb = values(db0);
    const Vec gv = values(g);
    ref_bn_backward(v, values(x), values(dy), &gv, values(sm), values(si), gdx, gdg, gdb);
    CHECK(rel_diff(gdx, values(dx)) <= 1e-5);
    CHECK(rel_diff(gdg, values(dg)) <= 1e-5);
    CHECK(rel_diff(gdb, values(db)) <= 1e-5);
  }
}

TEST_CASE(
    "cuDNN batch-norm seam: what cuDNN does not cover is declined; outputs not asked for go to "
    "scratch") {
  float p = 0;
  BatchNormArgs a;
  a.n = 4;
  a.c = 3;
  a.inner = 25;
  auto fwd = [&](const BatchNormArgs& args) {
    return bn_forward_values(calls::BatchNormForward{args, &p, &p, &p, &p, &p, &p, &p, &p});
  };
  CHECK(fwd(a).covered);
  BatchNormArgs eval = a;
  eval.training = false;  // inference writes no saved statistics: the shared kernels run it
  CHECK_FALSE(fwd(eval).covered);
  BatchNormArgs one = a;
  one.n = 1;
  one.inner = 1;  // M = 1: no unbiased variance
  CHECK_FALSE(fwd(one).covered);
  BatchNormArgs big = a;
  big.n = std::int64_t{1} << 16;
  big.c = 1 << 8;
  big.inner = 1 << 8;  // 2^32 elements
  CHECK_FALSE(fwd(big).covered);
  CHECK_FALSE(
      bn_backward_values(calls::BatchNormBackward{big, &p, &p, &p, &p, &p, &p, &p, &p}).covered);
  CHECK_THROWS_WITH_AS(
      bn_forward_values(calls::BatchNormForward{a, &p, &p, &p, &p, nullptr, &p, &p, &p}),
      doctest::Contains("running_mean and running_var come together"), Error);
  const BnBackwardValues v = bn_backward_values(
      calls::BatchNormBackward{a, &p, &p, nullptr, &p, &p, nullptr, nullptr, &p});
  CHECK(v.unit_scale);
  CHECK(v.dx_scratch);
  CHECK(v.dgamma_scratch);
  CHECK_FALSE(v.dbeta_scratch);
}

// ---- softmax (cudnn_ops.h, CHANNEL mode) ----

TEST_CASE("cuDNN softmax seam: CHANNEL mode over [outer, C, inner, 1] matches the host") {
  for (bool log : {false, true}) {
    CAPTURE(log);
    const Shape xs{3, 7, 4};
    const SoftmaxValues v = softmax_values(log, ChannelDims{3, 7, 4});
    REQUIRE(v.covered);
    CHECK(v.mode == ce::kSoftmaxModeChannel);
    CHECK(v.algorithm == (log ? ce::kSoftmaxLog : ce::kSoftmaxAccurate));
    CHECK(v.alpha == 1.0f);
    CHECK(v.beta == 0.0f);
    REQUIRE(v.t.w == 1);
    const Tensor x = uni(xs, 48, -4, 4), dy = uni(xs, 49);
    Tensor y = Tensor::zeros(xs, DType::f32, host_device());
    Tensor dx = Tensor::zeros(xs, DType::f32, host_device());
    ops::softmax_forward(log, x, y, 1);
    ops::softmax_backward(log, y, dy, dx, 1);
    // The reference: for each (n, h), over c; ACCURATE subtracts the max; LOG is log-softmax.
    // Backward from y: ACCURATE dx = y (dy - sum dy y); LOG dx = dy - exp(y) sum dy.
    const Vec xv = values(x), yv = values(y), dyv = values(dy);
    Vec ry(xv.size(), NAN), rdx(xv.size(), NAN);
    const int C = v.t.c, H = v.t.h;
    const bool lg = v.algorithm == ce::kSoftmaxLog;
    for (int n = 0; n < v.t.n; ++n)
      for (int h = 0; h < H; ++h) {
        auto at = [&](int c) { return (std::size_t(n) * C + c) * H + h; };
        double mx = -INFINITY, sum = 0, sdy = 0, sdyy = 0;
        for (int c = 0; c < C; ++c) mx = std::fmax(mx, xv[at(c)]);
        for (int c = 0; c < C; ++c) sum += std::exp(xv[at(c)] - mx);
        for (int c = 0; c < C; ++c) {
          const double r = lg ? xv[at(c)] - mx - std::log(sum) : std::exp(xv[at(c)] - mx) / sum;
          ry[at(c)] = blend(v.alpha, r, v.beta, ry[at(c)]);
          sdy += dyv[at(c)];
          sdyy += double(dyv[at(c)]) * yv[at(c)];
        }
        for (int c = 0; c < C; ++c) {
          const double d =
              lg ? dyv[at(c)] - std::exp(double(yv[at(c)])) * sdy : yv[at(c)] * (dyv[at(c)] - sdyy);
          rdx[at(c)] = blend(v.alpha, d, v.beta, rdx[at(c)]);
        }
      }
    CHECK(rel_diff(ry, values(y)) <= 1e-6);
    CHECK(rel_diff(rdx, values(dx)) <= 1e-6);
  }
  CHECK_FALSE(softmax_values(false, ChannelDims{std::int64_t{1} << 20, 1 << 12, 1}).covered);
}

TEST_SUITE_END();
