// Exact convolution sums for tests that check an f32 (or bf16-input) convolution against the
// bound of f32 summation: per output, the sum in double and the sum of the terms' magnitudes.
// Stride 1, no padding, one group (what the tests use). Used by tests/backends/cuda/test_cuda_modes
// (the GPU against exact sums) and tests/layers/test_autocast (bf16 products on the host).
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"

namespace cohort::testing {

// An exact result: per output, the double sum and the sum of the terms' magnitudes.
struct Exact {
  std::vector<double> val, mag;
  std::int64_t terms = 0;  // the most terms any output sums
};
constexpr double kU = 1.0 / 16777216.0;  // 2^-24

// max over outputs of |got - exact| / mag, in units of u (an output with mag 0 must be exact).
inline double err_u(const Tensor& got, const Exact& e) {
  const std::vector<float> g = got.to(host_device()).to_vector<float>();
  if (g.size() != e.val.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double d = std::fabs(double(g[i]) - e.val[i]);
    worst = std::fmax(worst, e.mag[i] > 0 ? d / e.mag[i] / kU : (d > 0 ? INFINITY : 0.0));
  }
  return worst;
}

inline std::vector<double> host_values(const Tensor& t) {
  const std::vector<float> v = t.to(host_device()).to_vector<float>();
  return std::vector<double>(v.begin(), v.end());
}

// Stride 1, no padding, one group: the only case this test uses.
// y = relu(conv(x, w) + b) (relu is 1-Lipschitz, so the sum's bound holds after it).
inline Exact exact_forward(const Tensor& xt, const Tensor& wt, const Tensor& bt, bool relu) {
  const Shape xs = xt.shape(), ws = wt.shape();
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ws[0], R = ws[2], S = ws[3];
  const std::int64_t OH = H - R + 1, OW = W - S + 1;
  const std::vector<double> x = host_values(xt), w = host_values(wt), b = host_values(bt);
  Exact e;
  e.terms = C * R * S + 1;
  e.val.assign(std::size_t(N * K * OH * OW), 0.0);
  e.mag.assign(e.val.size(), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double v = b[k], m = std::fabs(b[k]);
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t r = 0; r < R; ++r) {
              const double* xr = &x[std::size_t(((n * C + c) * H + oh + r) * W + ow)];
              const double* wr = &w[std::size_t(((k * C + c) * R + r) * S)];
              for (std::int64_t q = 0; q < S; ++q) {
                v += xr[q] * wr[q];
                m += std::fabs(xr[q] * wr[q]);
              }
            }
          const std::size_t i = std::size_t(((n * K + k) * OH + oh) * OW + ow);
          e.val[i] = relu ? std::fmax(v, 0.0) : v;
          e.mag[i] = m;
        }
  return e;
}

// dw = start + sum over n, oh, ow of x * dy; db = start_b + sum of dy.
inline std::pair<Exact, Exact> exact_backward_filter(const Tensor& xt, const Tensor& dyt,
                                                     const Tensor& w0, const Tensor& b0) {
  const Shape xs = xt.shape(), ys = dyt.shape(), ws = w0.shape();
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ys[1], OH = ys[2], OW = ys[3];
  const std::int64_t R = ws[2], S = ws[3];
  const std::vector<double> x = host_values(xt), dy = host_values(dyt);
  Exact dw, db;
  dw.val = host_values(w0);
  dw.mag.resize(dw.val.size());
  for (std::size_t i = 0; i < dw.val.size(); ++i) dw.mag[i] = std::fabs(dw.val[i]);
  db.val = host_values(b0);
  db.mag.resize(db.val.size());
  for (std::size_t i = 0; i < db.val.size(); ++i) db.mag[i] = std::fabs(db.val[i]);
  dw.terms = db.terms = N * OH * OW + 1;
  for (std::int64_t k = 0; k < K; ++k) {
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < OH * OW; ++i) {
        const double g = dy[std::size_t((n * K + k) * OH * OW + i)];
        db.val[std::size_t(k)] += g;
        db.mag[std::size_t(k)] += std::fabs(g);
      }
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t q = 0; q < S; ++q) {
          double v = 0, m = 0;
          for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t oh = 0; oh < OH; ++oh) {
              const double* xr = &x[std::size_t(((n * C + c) * H + oh + r) * W + q)];
              const double* gr = &dy[std::size_t(((n * K + k) * OH + oh) * OW)];
              for (std::int64_t ow = 0; ow < OW; ++ow) {
                v += xr[ow] * gr[ow];
                m += std::fabs(xr[ow] * gr[ow]);
              }
            }
          const std::size_t i = std::size_t(((k * C + c) * R + r) * S + q);
          dw.val[i] += v;
          dw.mag[i] += m;
        }
  }
  return {dw, db};
}

// dx = sum over k, r, s of dy[oh = h - r, ow = w - s] * w (dx starts at zero).
inline Exact exact_backward_data(const Tensor& dyt, const Tensor& wt, const Shape& xs) {
  const Shape ys = dyt.shape(), ws = wt.shape();
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = ys[1], OH = ys[2], OW = ys[3];
  const std::int64_t R = ws[2], S = ws[3];
  const std::vector<double> dy = host_values(dyt), w = host_values(wt);
  Exact e;
  e.terms = K * R * S;
  e.val.assign(std::size_t(N * C * H * W), 0.0);
  e.mag.assign(e.val.size(), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t q = 0; q < S; ++q) {
            const double wv = w[std::size_t(((k * C + c) * R + r) * S + q)];
            for (std::int64_t oh = 0; oh < OH; ++oh) {
              const double* gr = &dy[std::size_t(((n * K + k) * OH + oh) * OW)];
              const std::size_t row = std::size_t(((n * C + c) * H + oh + r) * W + q);
              for (std::int64_t ow = 0; ow < OW; ++ow) {
                e.val[row + std::size_t(ow)] += gr[ow] * wv;
                e.mag[row + std::size_t(ow)] += std::fabs(gr[ow] * wv);
              }
            }
          }
  return e;
}

}  // namespace cohort::testing
