// Reference of scaled dot-product attention, head by head, written as the textbook does it: the
// T x T scores S = scale Q K^T, P = softmax of each row (its maximum subtracted, summed in
// double), out = P V; backward by the chain rule through each step: dV = P^T dO, dP = dO V^T,
// the softmax's Jacobian-vector product dS = P (dP - sum_j dP P), dQ = scale dS K,
// dK = scale dS^T Q. Everything in double.
#include <algorithm>
#include <cmath>

#include "reference.hpp"

namespace parity_ref {
namespace {

struct Heads {
  std::int64_t n, t, h, dh;
  // Element d of q (part 0), k (1) or v (2) of token i, batch entry b, head hh.
  std::size_t qkv(std::int64_t b, std::int64_t i, int part, std::int64_t hh, std::int64_t d) const {
    return static_cast<std::size_t>((((b * t + i) * 3 + part) * h + hh) * dh + d);
  }
  std::size_t out(std::int64_t b, std::int64_t i, std::int64_t hh, std::int64_t d) const {
    return static_cast<std::size_t>(((b * t + i) * h + hh) * dh + d);
  }
};

// P of head (b, hh), row-major [t, t], and each row's log-sum-exp.
Vec probabilities(const Vec& qkv, const Heads& x, std::int64_t b, std::int64_t hh, double scale,
                  Vec* lse) {
  Vec p(static_cast<std::size_t>(x.t * x.t));
  for (std::int64_t i = 0; i < x.t; ++i) {
    double mx = -INFINITY;
    for (std::int64_t j = 0; j < x.t; ++j) {
      double s = 0;
      for (std::int64_t d = 0; d < x.dh; ++d)
        s += qkv[x.qkv(b, i, 0, hh, d)] * qkv[x.qkv(b, j, 1, hh, d)];
      p[i * x.t + j] = scale * s;
      mx = std::max(mx, scale * s);
    }
    double sum = 0;
    for (std::int64_t j = 0; j < x.t; ++j) sum += std::exp(p[i * x.t + j] - mx);
    for (std::int64_t j = 0; j < x.t; ++j) p[i * x.t + j] = std::exp(p[i * x.t + j] - mx) / sum;
    if (lse) (*lse)[static_cast<std::size_t>((b * x.h + hh) * x.t + i)] = mx + std::log(sum);
  }
  return p;
}

}  // namespace

AttentionOut attention_forward(const Vec& qkv, std::int64_t n, std::int64_t t, std::int64_t h,
                               std::int64_t dh, double scale) {
  const Heads x{n, t, h, dh};
  AttentionOut r{Vec(static_cast<std::size_t>(n * t * h * dh)),
                 Vec(static_cast<std::size_t>(n * h * t))};
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t hh = 0; hh < h; ++hh) {
      const Vec p = probabilities(qkv, x, b, hh, scale, &r.lse);
      for (std::int64_t i = 0; i < t; ++i)
        for (std::int64_t d = 0; d < dh; ++d) {
          double o = 0;
          for (std::int64_t j = 0; j < t; ++j) o += p[i * t + j] * qkv[x.qkv(b, j, 2, hh, d)];
          r.out[x.out(b, i, hh, d)] = o;
        }
    }
  return r;
}

Vec attention_backward(const Vec& qkv, const Vec& dout, std::int64_t n, std::int64_t t,
                       std::int64_t h, std::int64_t dh, double scale) {
  const Heads x{n, t, h, dh};
  Vec dqkv(qkv.size(), 0.0);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t hh = 0; hh < h; ++hh) {
      const Vec p = probabilities(qkv, x, b, hh, scale, nullptr);
      Vec dp(p.size()), ds(p.size());
      for (std::int64_t i = 0; i < t; ++i)
        for (std::int64_t j = 0; j < t; ++j) {
          double s = 0;  // dP = dO V^T
          for (std::int64_t d = 0; d < dh; ++d)
            s += dout[x.out(b, i, hh, d)] * qkv[x.qkv(b, j, 2, hh, d)];
          dp[i * t + j] = s;
        }
      for (std::int64_t i = 0; i < t; ++i) {
        double dot = 0;
        for (std::int64_t j = 0; j < t; ++j) dot += dp[i * t + j] * p[i * t + j];
        for (std::int64_t j = 0; j < t; ++j) ds[i * t + j] = p[i * t + j] * (dp[i * t + j] - dot);
      }
      for (std::int64_t i = 0; i < t; ++i)
        for (std::int64_t d = 0; d < dh; ++d) {
          double dq = 0, dk = 0, dv = 0;
          for (std::int64_t j = 0; j < t; ++j) {
            dq += ds[i * t + j] * qkv[x.qkv(b, j, 1, hh, d)];  // row i of dS K
            dk += ds[j * t + i] * qkv[x.qkv(b, j, 0, hh, d)];  // row i of dS^T Q
            dv += p[j * t + i] * dout[x.out(b, j, hh, d)];     // row i of P^T dO
          }
          dqkv[x.qkv(b, i, 0, hh, d)] = scale * dq;
          dqkv[x.qkv(b, i, 1, hh, d)] = scale * dk;
          dqkv[x.qkv(b, i, 2, hh, d)] = dv;
        }
    }
  return dqkv;
}

}  // namespace parity_ref
