// Reference of batch and layer normalisation, forward and backward, from the definitions
// (PyTorch's BatchNorm2d and LayerNorm): statistics in double over the normalised elements, the
// biased variance inside the square root, the unbiased one in the running variance, and the
// gradients of y = (x - mean) * invstd * gamma + beta written out per element.
#include <cmath>

#include "reference.hpp"

namespace parity_ref {
namespace {

// Mean and biased variance of channel c of x [n, c, inner].
void channel_stats(const Vec& x, std::int64_t n, std::int64_t c, std::int64_t inner,
                   std::int64_t ch, double* mean, double* var) {
  double s = 0, ss = 0;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < inner; ++i) s += x[(b * c + ch) * inner + i];
  const double m = static_cast<double>(n * inner);
  *mean = s / m;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < inner; ++i) {
      const double d = x[(b * c + ch) * inner + i] - *mean;
      ss += d * d;
    }
  *var = ss / m;
}

double at_or(const Vec& v, std::int64_t i, double none) { return v.empty() ? none : v[i]; }

}  // namespace

BatchNormOut batch_norm_forward(const Vec& x, std::int64_t n, std::int64_t c, std::int64_t inner,
                                const Vec& gamma, const Vec& beta, const Vec& running_mean,
                                const Vec& running_var, double eps, double momentum,
                                bool training) {
  BatchNormOut o;
  o.y.resize(x.size());
  o.save_mean.resize(c);
  o.save_invstd.resize(c);
  o.running_mean = running_mean;
  o.running_var = running_var;
  const double m = static_cast<double>(n * inner);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    if (training) {
      channel_stats(x, n, c, inner, ch, &mean, &var);
      if (!running_mean.empty()) {
        o.running_mean[ch] = (1 - momentum) * running_mean[ch] + momentum * mean;
        o.running_var[ch] = (1 - momentum) * running_var[ch] + momentum * var * m / (m - 1);
      }
    } else {
      mean = running_mean[ch];
      var = running_var[ch];
    }
    const double invstd = 1.0 / std::sqrt(var + eps);
    o.save_mean[ch] = mean;
    o.save_invstd[ch] = invstd;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t at = (b * c + ch) * inner + i;
        o.y[at] = (x[at] - mean) * invstd * at_or(gamma, ch, 1.0) + at_or(beta, ch, 0.0);
      }
  }
  return o;
}

NormGrads batch_norm_backward(const Vec& x, const Vec& dy, std::int64_t n, std::int64_t c,
                              std::int64_t inner, const Vec& gamma, const Vec& running_mean,
                              const Vec& running_var, double eps, bool training, const Vec& dgamma0,
                              const Vec& dbeta0) {
  NormGrads g{Vec(x.size()), dgamma0, dbeta0};
  const double m = static_cast<double>(n * inner);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    if (training) {
      channel_stats(x, n, c, inner, ch, &mean, &var);
    } else {
      mean = running_mean[ch];
      var = running_var[ch];
    }
    const double invstd = 1.0 / std::sqrt(var + eps), gm = at_or(gamma, ch, 1.0);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t at = (b * c + ch) * inner + i;
        sum_dy += dy[at];
        sum_dy_xhat += dy[at] * (x[at] - mean) * invstd;
      }
    if (!g.dgamma.empty()) g.dgamma[ch] += sum_dy_xhat;
    if (!g.dbeta.empty()) g.dbeta[ch] += sum_dy;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t at = (b * c + ch) * inner + i;
        const double xhat = (x[at] - mean) * invstd;
        // Eval: mean and invstd are constants, so dx is dy scaled. Training: they depend on x
        // through the batch, which subtracts dy's mean and its projection on xhat.
        g.dx[at] = training ? gm * invstd * (dy[at] - sum_dy / m - xhat * sum_dy_xhat / m)
                            : gm * invstd * dy[at];
      }
  }
  return g;
}

LayerNormOut layer_norm_forward(const Vec& x, std::int64_t rows, std::int64_t cols,
                                const Vec& gamma, const Vec& beta, double eps) {
  LayerNormOut o{Vec(x.size()), Vec(rows), Vec(rows)};
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    channel_stats(x, 1, rows, cols, r, &mean, &var);  // row r is "channel" r of [1, rows, cols]
    const double rstd = 1.0 / std::sqrt(var + eps);
    o.mean[r] = mean;
    o.rstd[r] = rstd;
    for (std::int64_t j = 0; j < cols; ++j)
      o.y[r * cols + j] =
          (x[r * cols + j] - mean) * rstd * at_or(gamma, j, 1.0) + at_or(beta, j, 0.0);
  }
  return o;
}

NormGrads layer_norm_backward(const Vec& x, const Vec& dy, std::int64_t rows, std::int64_t cols,
                              const Vec& gamma, double eps, const Vec& dgamma0, const Vec& dbeta0) {
  NormGrads g{Vec(x.size()), dgamma0, dbeta0};
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    channel_stats(x, 1, rows, cols, r, &mean, &var);
    const double rstd = 1.0 / std::sqrt(var + eps), m = static_cast<double>(cols);
    double sum_gdy = 0, sum_gdy_xhat = 0;  // of gamma * dy, the gradient w.r.t. xhat
    for (std::int64_t j = 0; j < cols; ++j) {
      const double xhat = (x[r * cols + j] - mean) * rstd,
                   gdy = at_or(gamma, j, 1.0) * dy[r * cols + j];
      sum_gdy += gdy;
      sum_gdy_xhat += gdy * xhat;
      if (!g.dgamma.empty()) g.dgamma[j] += dy[r * cols + j] * xhat;
      if (!g.dbeta.empty()) g.dbeta[j] += dy[r * cols + j];
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      const double xhat = (x[r * cols + j] - mean) * rstd,
                   gdy = at_or(gamma, j, 1.0) * dy[r * cols + j];
      g.dx[r * cols + j] = rstd * (gdy - sum_gdy / m - xhat * sum_gdy_xhat / m);
    }
  }
  return g;
}

}  // namespace parity_ref
