// Normalisation family: batch_norm_forward / backward (statistics per channel, then the affine map
// per (image, channel) plane) and layer_norm_forward / backward (over the last `cols` elements of
// each row). Statistics accumulate in double. The CUDA device sends training-mode batch norm to
// cuDNN (backends/cuda/norm.cu).
#pragma once

#include <cmath>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Batch normalisation: statistics per channel, then the affine map per (image, channel) plane.

struct BatchNormStats {  // item: channel
  BatchNormArgs a;
  const float* x;
  float* running_mean;  // nullable
  float* running_var;   // nullable
  float* save_mean;
  float* save_invstd;
  i64 cost() const { return 2 * a.n * a.inner; }
  COHORT_HD void operator()(i64 c) const {
    if (!a.training) {
      save_mean[c] = running_mean[c];
      save_invstd[c] = static_cast<float>(1.0 / ::sqrt(static_cast<double>(running_var[c]) + a.eps));
      return;
    }
    const double m = static_cast<double>(a.n * a.inner);
    double sum = 0.0;
    for (i64 b = 0; b < a.n; ++b) sum += sum_of(x + (b * a.c + c) * a.inner, a.inner);
    const double mean = sum / m;
    double sq = 0.0;  // two passes: no cancellation for data far from zero
    for (i64 b = 0; b < a.n; ++b) sq += sum_sq_dev(x + (b * a.c + c) * a.inner, a.inner, mean);
    const double var = sq / m;
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(1.0 / ::sqrt(var + a.eps));
    if (running_mean) {
      running_mean[c] = static_cast<float>((1.0 - a.momentum) * running_mean[c] + a.momentum * mean);
      running_var[c] = static_cast<float>((1.0 - a.momentum) * running_var[c] +
                                          a.momentum * var * m / (m - 1.0));
    }
  }
};

struct BatchNormApply {  // item: (image, channel) plane
  BatchNormArgs a;
  const float* x;
  const float* gamma;  // nullable
  const float* beta;   // nullable
  const float* mean;
  const float* invstd;
  float* y;
  i64 cost() const { return a.inner; }
  COHORT_HD void operator()(i64 plane) const {
    const i64 c = plane % a.c;
    const float scale = invstd[c] * (gamma ? gamma[c] : 1.0f);
    const float shift = (beta ? beta[c] : 0.0f) - mean[c] * scale;
    const float* in = x + plane * a.inner;
    float* out = y + plane * a.inner;
    for (i64 i = 0; i < a.inner; ++i) out[i] = in[i] * scale + shift;
  }
};

struct BatchNormBackwardChannel {  // item: channel; the call's operands as they came
  calls::BatchNormBackward call;
  i64 cost() const { return 3 * call.a.n * call.a.inner; }
  COHORT_HD void operator()(i64 c) const {
    const BatchNormArgs& a = call.a;
    const float *x = call.x, *dy = call.dy, *gamma = call.gamma;
    float *dx = call.dx, *dgamma = call.dgamma, *dbeta = call.dbeta;
    const float mu = call.save_mean[c], is = call.save_invstd[c];
    double sdy = 0.0, sdyx = 0.0;  // sum dy, sum dy * xhat
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c) * a.inner;
      sum_g_gxhat(dy + off, x + off, a.inner, mu, is, sdy, sdyx);
    }
    if (dgamma) dgamma[c] += static_cast<float>(sdyx);
    if (dbeta) dbeta[c] += static_cast<float>(sdy);
    if (!dx) return;
    const float g = (gamma ? gamma[c] : 1.0f) * is;
    const double m = static_cast<double>(a.n * a.inner);
    // Training: the batch statistics depend on x too (the two mean terms); eval: a fixed affine map.
    const float k1 = a.training ? static_cast<float>(sdy / m) : 0.0f;
    const float k2 = a.training ? static_cast<float>(sdyx / m) : 0.0f;
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c) * a.inner;
      for (i64 i = 0; i < a.inner; ++i)
        dx[off + i] = g * (dy[off + i] - k1 - (x[off + i] - mu) * is * k2);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Layer normalisation over the last `cols` elements of each row.

struct LayerNormForwardRow {  // item: row
  LayerNormArgs a;
  const float* x;
  const float* gamma;  // nullable
  const float* beta;   // nullable
  float* y;
  float* save_mean;
  float* save_rstd;
  const float* residual;  // nullable: sum = x + residual is written and normalised
  float* sum;
  i64 cost() const { return 3 * a.cols; }
  COHORT_HD void operator()(i64 r) const {
    const float* in = x + r * a.cols;
    float* out = y + r * a.cols;
    if (residual) {  // the add's pass, one row at a time: the norm reads it back from L1
      float* s = sum + r * a.cols;
      const float* res = residual + r * a.cols;
      for (i64 j = 0; j < a.cols; ++j) s[j] = in[j] + res[j];
      in = s;
    }
    const double mean = sum_of(in, a.cols) / static_cast<double>(a.cols);
    const double sq = sum_sq_dev(in, a.cols, mean);
    const float mu = static_cast<float>(mean);
    const float rs = static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(a.cols) + a.eps));
    save_mean[r] = mu;
    save_rstd[r] = rs;
    for (i64 j = 0; j < a.cols; ++j)
      out[j] = (in[j] - mu) * rs * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
  }
};

struct LayerNormBackwardRow {  // item: row; dx only
  LayerNormArgs a;
  const float* x;
  const float* dy;
  const float* gamma;  // nullable
  const float* mean;
  const float* rstd;
  float* dx;
  const float* dx_add;  // nullable: added to each dx element
  i64 cost() const { return 3 * a.cols; }
  COHORT_HD void operator()(i64 r) const {
    const float* in = x + r * a.cols;
    const float* g = dy + r * a.cols;
    float* out = dx + r * a.cols;
    const float mu = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;  // sum of (dy * gamma) and of (dy * gamma * xhat)
    for (i64 j = 0; j < a.cols; ++j) {
      const float gj = g[j] * (gamma ? gamma[j] : 1.0f);
      sg += gj;
      sgx += static_cast<double>(gj) * ((in[j] - mu) * rs);
    }
    const float k1 = static_cast<float>(sg / static_cast<double>(a.cols));
    const float k2 = static_cast<float>(sgx / static_cast<double>(a.cols));
    for (i64 j = 0; j < a.cols; ++j) {
      const float gj = g[j] * (gamma ? gamma[j] : 1.0f);
      out[j] = rs * (gj - k1 - (in[j] - mu) * rs * k2);
    }
    if (dx_add) {
      const float* add = dx_add + r * a.cols;
      for (i64 j = 0; j < a.cols; ++j) out[j] = add[j] + out[j];
    }
  }
};

// item: a block of `block` neighbouring columns (each summed in double over the rows in order),
// so each row is read a cache line at a time rather than one strided element per column item;
// items = ceil(cols / block). dgamma[j] += sum dy * xhat, dbeta[j] += sum dy.
struct LayerNormParamGradCols {
  static constexpr i64 block = 16;
  LayerNormArgs a;
  const float* x;
  const float* dy;
  const float* mean;
  const float* rstd;
  float* dgamma;  // nullable
  float* dbeta;   // nullable
  i64 cost() const { return a.rows * block; }
  COHORT_HD void operator()(i64 item) const {
    const i64 j0 = item * block;
    const i64 n = a.cols - j0 < block ? a.cols - j0 : block;
    double sg[block] = {}, sb[block] = {};
    if (n == block)  // a constant trip count: the compiler keeps the sums in vector registers
      sum_rows<block>(j0, sg, sb);
    else
      sum_rows<0>(j0, sg, sb, n);
    for (i64 k = 0; k < n; ++k) {
      if (dgamma) dgamma[j0 + k] += static_cast<float>(sg[k]);
      if (dbeta) dbeta[j0 + k] += static_cast<float>(sb[k]);
    }
  }
  // Columns [j0, j0 + (N ? N : n)) summed over every row, in row order.
  template <i64 N>
  COHORT_HD void sum_rows(i64 j0, double* sg, double* sb, i64 n = N) const {
    for (i64 r = 0; r < a.rows; ++r) {
      const float* g = dy + r * a.cols + j0;
      const float* xr = x + r * a.cols + j0;
      const float mu = mean[r], rs = rstd[r];
      for (i64 k = 0; k < (N ? N : n); ++k) {
        sb[k] += g[k];
        sg[k] += static_cast<double>(g[k]) * ((xr[k] - mu) * rs);
      }
    }
  }
};

template <class Exec>
void run(Exec& e, const calls::BatchNormForward& c) {
  e.for_each("cohort::batch_norm_stats", c.a.c,
             BatchNormStats{c.a, c.x, c.running_mean, c.running_var, c.save_mean, c.save_invstd});
  e.for_each("cohort::batch_norm_apply", c.a.n * c.a.c,
             BatchNormApply{c.a, c.x, c.gamma, c.beta, c.save_mean, c.save_invstd, c.y});
}
template <class Exec>
void run(Exec& e, const calls::BatchNormBackward& c) {
  e.for_each("cohort::batch_norm_backward", c.a.c, BatchNormBackwardChannel{c});
}
template <class Exec>
void run(Exec& e, const calls::LayerNormForward& c) {
  e.for_each("cohort::layer_norm_forward", c.a.rows,
             LayerNormForwardRow{c.a, c.x, c.gamma, c.beta, c.y, c.save_mean, c.save_rstd,
                                 c.residual, c.sum});
}
template <class Exec>
void run(Exec& e, const calls::LayerNormBackward& c) {
  if (c.dx)
    e.for_each(
        "cohort::layer_norm_backward", c.a.rows,
        LayerNormBackwardRow{c.a, c.x, c.dy, c.gamma, c.save_mean, c.save_rstd, c.dx, c.dx_add});
  if (c.dgamma || c.dbeta)
    e.for_each("cohort::layer_norm_param_grad",
               (c.a.cols + LayerNormParamGradCols::block - 1) / LayerNormParamGradCols::block,
               LayerNormParamGradCols{c.a, c.x, c.dy, c.save_mean, c.save_rstd, c.dgamma,
                                      c.dbeta});
}

}  // namespace cohort::kernels
