// Normalisation family: batch_norm_forward / backward (statistics per channel, then the affine map
// per (image, channel) plane) and layer_norm_forward / backward (over the last `cols` elements of
// each row). Statistics accumulate in double. The CUDA device sends training-mode batch norm to
// cuDNN (backends/cuda/norm.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Batch normalisation: statistics per channel, then the affine map per (image, channel) plane.

// The per-channel ends of batch norm, shared by the per-channel items and the channel blocks below
// so both give the same bits: the statistics from a channel's mean and biased variance (and the
// running averages, unbiased), the backward's coefficients from its two sums, and dx's formula.
COHORT_HD void bn_store_stats(const BatchNormArgs& a, i64 c, double mean, double var,
                              float* running_mean, float* running_var, float* save_mean,
                              float* save_invstd) {
  const double m = static_cast<double>(a.n * a.inner);
  save_mean[c] = static_cast<float>(mean);
  save_invstd[c] = static_cast<float>(1.0 / ::sqrt(var + a.eps));
  if (running_mean) {
    running_mean[c] = static_cast<float>((1.0 - a.momentum) * running_mean[c] + a.momentum * mean);
    running_var[c] =
        static_cast<float>((1.0 - a.momentum) * running_var[c] + a.momentum * var * m / (m - 1.0));
  }
}
COHORT_HD void bn_eval_stats(const BatchNormArgs& a, i64 c, const float* running_mean,
                             const float* running_var, float* save_mean, float* save_invstd) {
  save_mean[c] = running_mean[c];
  save_invstd[c] = static_cast<float>(1.0 / ::sqrt(static_cast<double>(running_var[c]) + a.eps));
}
struct BnBackwardCoeffs {
  float g, k1, k2;
};
// dgamma / dbeta accumulated from the sums, and dx = g (dy - k1 - xhat k2)'s coefficients.
COHORT_HD BnBackwardCoeffs bn_backward_coeffs(const calls::BatchNormBackward& call, i64 c,
                                              double sdy, double sdyx) {
  const BatchNormArgs& a = call.a;
  if (call.dgamma) call.dgamma[c] += static_cast<float>(sdyx);
  if (call.dbeta) call.dbeta[c] += static_cast<float>(sdy);
  const double m = static_cast<double>(a.n * a.inner);
  // Training: the batch statistics depend on x too (the two mean terms); eval: a fixed affine map.
  return {(call.gamma ? call.gamma[c] : 1.0f) * call.save_invstd[c],
          a.training ? static_cast<float>(sdy / m) : 0.0f,
          a.training ? static_cast<float>(sdyx / m) : 0.0f};
}
COHORT_HD float bn_dx(const BnBackwardCoeffs& k, float dy, float x, float mu, float is) {
  return k.g * (dy - k.k1 - (x - mu) * is * k.k2);
}

struct BatchNormStats {  // item: channel
  BatchNormArgs a;
  const float* x;
  float* running_mean;  // nullable
  float* running_var;   // nullable
  float* save_mean;
  float* save_invstd;
  i64 cost() const { return 2 * a.n * a.inner; }
  COHORT_HD void operator()(i64 c) const {
    if (!a.training) return bn_eval_stats(a, c, running_mean, running_var, save_mean, save_invstd);
    const double m = static_cast<double>(a.n * a.inner);
    double sum = 0.0;
    for (i64 b = 0; b < a.n; ++b) sum += sum_of(x + (b * a.c + c) * a.inner, a.inner);
    const double mean = sum / m;
    double sq = 0.0;  // two passes: no cancellation for data far from zero
    for (i64 b = 0; b < a.n; ++b) sq += sum_sq_dev(x + (b * a.c + c) * a.inner, a.inner, mean);
    bn_store_stats(a, c, mean, sq / m, running_mean, running_var, save_mean, save_invstd);
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
  // Channel c's map y = x * scale + shift.
  COHORT_HD void affine(i64 c, float& scale, float& shift) const {
    scale = invstd[c] * (gamma ? gamma[c] : 1.0f);
    shift = (beta ? beta[c] : 0.0f) - mean[c] * scale;
  }
  COHORT_HD void operator()(i64 plane) const {
    float scale, shift;
    affine(plane % a.c, scale, shift);
    const float* in = x + plane * a.inner;
    float* out = y + plane * a.inner;
    for (i64 i = 0; i < a.inner; ++i) out[i] = in[i] * scale + shift;
  }
};

// BatchNormApply one element per item, for executors with kFineItems (the GPU: eval mode and the
// cases cuDNN declines); the same scale and shift, so the same bits.
struct BatchNormApplyElement {  // item: element; items = n * c * inner
  BatchNormApply p;
  i64 cost() const { return 1; }
  COHORT_HD void operator()(i64 i) const {
    float scale, shift;
    p.affine((i / p.a.inner) % p.a.c, scale, shift);
    p.y[i] = p.x[i] * scale + shift;
  }
};

struct BatchNormBackwardChannel {  // item: channel; the call's operands as they came
  calls::BatchNormBackward call;
  i64 cost() const { return 3 * call.a.n * call.a.inner; }
  COHORT_HD void operator()(i64 c) const {
    const BatchNormArgs& a = call.a;
    const float *x = call.x, *dy = call.dy;
    const float mu = call.save_mean[c], is = call.save_invstd[c];
    double sdy = 0.0, sdyx = 0.0;  // sum dy, sum dy * xhat
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c) * a.inner;
      sum_g_gxhat(dy + off, x + off, a.inner, mu, is, sdy, sdyx);
    }
    const BnBackwardCoeffs k = bn_backward_coeffs(call, c, sdy, sdyx);
    if (!call.dx) return;
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c) * a.inner;
      for (i64 i = 0; i < a.inner; ++i)
        call.dx[off + i] = bn_dx(k, dy[off + i], x[off + i], mu, is);
    }
  }
};

// Batch norm over short planes (inner < kSumBlock: a ResNet's late stages, 4x4 down to 1x1 maps),
// where the items above read a channel's plane of each image C * inner floats apart: at inner 1
// and 2048 channels every read of one channel falls in the same L1 set, and the apply item does
// one element. These take kBnChannels neighbouring channels per item (the apply: one image per
// item) and walk the batch image by image (bn_block_loop says in which order within an image). Per
// channel they add the same terms in the same order, in double, as the items above do for planes
// shorter than kSumBlock (sum_of's and sum_sq_dev's per-image totals, sum_g_gxhat's running sums),
// so the results are the same bits. The host takes them (backends/host/op_table.cpp); the GPU keeps
// the items above, whose neighbouring threads already read neighbouring channels.
constexpr i64 kBnChannels = 16;
// f(j, i) over the block's nc channels and each plane's inner elements: across the channels
// innermost for planes under 8 elements (at 1x1 and 2x2, neighbouring j are neighbouring floats),
// along each plane innermost from 8 on (contiguous runs). Either way one channel's elements come
// in order, so its sums are the same.
template <class F>
COHORT_HD void bn_block_loop(i64 nc, i64 inner, const F& f) {
  if (inner >= 8) {
    for (i64 j = 0; j < nc; ++j)
      for (i64 i = 0; i < inner; ++i) f(j, i);
  } else {
    for (i64 i = 0; i < inner; ++i)
      for (i64 j = 0; j < nc; ++j) f(j, i);
  }
}
inline bool bn_short_planes(const BatchNormArgs& a) { return a.inner < kSumBlock; }
inline i64 bn_channel_blocks(const BatchNormArgs& a) {
  return (a.c + kBnChannels - 1) / kBnChannels;
}

struct BatchNormStatsBlock {  // item: kBnChannels channels; short planes only
  BatchNormStats s;
  i64 cost() const { return 2 * kBnChannels * s.a.n * s.a.inner; }
  COHORT_HD void operator()(i64 block) const {
    const i64 c0 = block * kBnChannels;
    if (s.a.c - c0 >= kBnChannels) return channels<kBnChannels>(c0, kBnChannels);
    channels<0>(c0, s.a.c - c0);
  }
  // N: the block's channel count when it is the full kBnChannels (a constant the compiler unrolls
  // and vectorises by), else 0 and `nc` says.
  template <i64 N>
  COHORT_HD void channels(i64 c0, i64 nc) const {
    const BatchNormArgs& a = s.a;
    if (N) nc = N;
    if (!a.training) {
      for (i64 j = 0; j < nc; ++j)
        bn_eval_stats(a, c0 + j, s.running_mean, s.running_var, s.save_mean, s.save_invstd);
      return;
    }
    const double m = static_cast<double>(a.n * a.inner);
    double sum[kBnChannels] = {}, mean[kBnChannels], sq[kBnChannels] = {}, part[kBnChannels];
    for (i64 b = 0; b < a.n; ++b) {
      const float* p = s.x + (b * a.c + c0) * a.inner;
      for (i64 j = 0; j < nc; ++j) part[j] = 0.0;
      bn_block_loop(nc, a.inner, [&](i64 j, i64 i) { part[j] += p[j * a.inner + i]; });
      for (i64 j = 0; j < nc; ++j) sum[j] += part[j];
    }
    for (i64 j = 0; j < nc; ++j) mean[j] = sum[j] / m;
    for (i64 b = 0; b < a.n; ++b) {
      const float* p = s.x + (b * a.c + c0) * a.inner;
      for (i64 j = 0; j < nc; ++j) part[j] = 0.0;
      bn_block_loop(nc, a.inner, [&](i64 j, i64 i) {
        const double d = p[j * a.inner + i] - mean[j];
        part[j] += d * d;
      });
      for (i64 j = 0; j < nc; ++j) sq[j] += part[j];
    }
    for (i64 j = 0; j < nc; ++j)
      bn_store_stats(a, c0 + j, mean[j], sq[j] / m, s.running_mean, s.running_var, s.save_mean,
                     s.save_invstd);
  }
};

struct BatchNormApplyImage {  // item: image (all its channels); short planes only
  BatchNormApply p;
  i64 cost() const { return p.a.c * p.a.inner; }
  COHORT_HD void operator()(i64 b) const {
    for (i64 c = 0; c < p.a.c; ++c) p(b * p.a.c + c);
  }
};

struct BatchNormBackwardBlock {  // item: kBnChannels channels; short planes only
  calls::BatchNormBackward call;
  i64 cost() const { return 3 * kBnChannels * call.a.n * call.a.inner; }
  COHORT_HD void operator()(i64 block) const {
    const i64 c0 = block * kBnChannels;
    if (call.a.c - c0 >= kBnChannels) return channels<kBnChannels>(c0, kBnChannels);
    channels<0>(c0, call.a.c - c0);
  }
  template <i64 N>  // as BatchNormStatsBlock's
  COHORT_HD void channels(i64 c0, i64 nc) const {
    const BatchNormArgs& a = call.a;
    if (N) nc = N;
    const float* mu = call.save_mean + c0;
    const float* is = call.save_invstd + c0;
    double sdy[kBnChannels] = {}, sdyx[kBnChannels] = {};
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c0) * a.inner;
      const float *g = call.dy + off, *x = call.x + off;
      bn_block_loop(nc, a.inner, [&](i64 j, i64 i) {
        const i64 k = j * a.inner + i;
        sdy[j] += g[k];
        sdyx[j] += static_cast<double>(g[k]) * ((x[k] - mu[j]) * is[j]);
      });
    }
    BnBackwardCoeffs k[kBnChannels];
    for (i64 j = 0; j < nc; ++j) k[j] = bn_backward_coeffs(call, c0 + j, sdy[j], sdyx[j]);
    if (!call.dx) return;
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c0) * a.inner;
      bn_block_loop(nc, a.inner, [&](i64 j, i64 i) {
        const i64 q = off + j * a.inner + i;
        call.dx[q] = bn_dx(k[j], call.dy[q], call.x[q], mu[j], is[j]);
      });
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
  // Row r's statistics into save_mean / save_rstd, after writing x + residual to sum when there
  // is a residual; returns the row they are of.
  COHORT_HD const float* stats(i64 r) const {
    const float* in = x + r * a.cols;
    if (residual) {  // the add's pass, one row at a time: the norm reads it back from L1
      float* s = sum + r * a.cols;
      const float* res = residual + r * a.cols;
      for (i64 j = 0; j < a.cols; ++j) s[j] = in[j] + res[j];
      in = s;
    }
    const double mean = sum_of(in, a.cols) / static_cast<double>(a.cols);
    const double sq = sum_sq_dev(in, a.cols, mean);
    save_mean[r] = static_cast<float>(mean);
    save_rstd[r] = static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(a.cols) + a.eps));
    return in;
  }
  // Column j's output for the value v of a row with statistics mu, rs.
  COHORT_HD float value(float v, float mu, float rs, i64 j) const {
    return (v - mu) * rs * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
  }
  COHORT_HD void operator()(i64 r) const {
    const float* in = stats(r);
    const float mu = save_mean[r], rs = save_rstd[r];
    float* out = y + r * a.cols;
    for (i64 j = 0; j < a.cols; ++j) out[j] = value(in[j], mu, rs, j);
  }
};

// LayerNormForwardRow in two launches, for executors with kFineItems (the GPU): the statistics per
// row, then the affine map per element (coalesced, and a third of the row item's serial work off
// each thread). The same functions, so the same bits.
struct LayerNormStatsRow {  // item: row
  LayerNormForwardRow f;
  i64 cost() const { return 2 * f.a.cols; }
  COHORT_HD void operator()(i64 r) const { (void)f.stats(r); }
};
struct LayerNormApplyElement {  // item: element; items = rows * cols
  LayerNormForwardRow f;
  i64 cost() const { return 1; }
  COHORT_HD void operator()(i64 i) const {
    const i64 r = i / f.a.cols, j = i % f.a.cols;
    const float* in = (f.residual ? f.sum : f.x) + r * f.a.cols;
    f.y[i] = f.value(in[j], f.save_mean[r], f.save_rstd[r], j);
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
  // Row r's coefficients of dx = rstd (g - k1 - xhat k2), g = dy * gamma: k1 = mean of g, k2 =
  // mean of g * xhat.
  COHORT_HD void coeffs(i64 r, float& k1, float& k2) const {
    const float* in = x + r * a.cols;
    const float* g = dy + r * a.cols;
    const float mu = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;  // sum of (dy * gamma) and of (dy * gamma * xhat)
    for (i64 j = 0; j < a.cols; ++j) {
      const float gj = g[j] * (gamma ? gamma[j] : 1.0f);
      sg += gj;
      sgx += static_cast<double>(gj) * ((in[j] - mu) * rs);
    }
    k1 = static_cast<float>(sg / static_cast<double>(a.cols));
    k2 = static_cast<float>(sgx / static_cast<double>(a.cols));
  }
  // dx's element i (column j of a row with statistics mu, rs), before dx_add. The caller loads
  // the row's values once: dx is a float* as mean and rstd are, so the compiler must assume a
  // store to dx can change them.
  COHORT_HD float grad(i64 i, i64 j, float mu, float rs, float k1, float k2) const {
    const float gj = dy[i] * (gamma ? gamma[j] : 1.0f);
    return rs * (gj - k1 - (x[i] - mu) * rs * k2);
  }
  COHORT_HD void operator()(i64 r) const {
    float k1, k2;
    coeffs(r, k1, k2);
    const float mu = mean[r], rs = rstd[r];
    float* out = dx + r * a.cols;
    for (i64 j = 0; j < a.cols; ++j) out[j] = grad(r * a.cols + j, j, mu, rs, k1, k2);
    if (dx_add) {
      const float* add = dx_add + r * a.cols;
      for (i64 j = 0; j < a.cols; ++j) out[j] = add[j] + out[j];
    }
  }
};

// LayerNormBackwardRow in two launches, for executors with kFineItems (the GPU): the coefficients
// per row (into scratch), then dx one element per item. The same functions, and dx_add added to
// the rounded element as the row item does, so the same bits.
struct LayerNormGradCoeffsRow {  // item: row; k[2 r], k[2 r + 1] = k1, k2
  LayerNormBackwardRow b;
  float* k;
  i64 cost() const { return 2 * b.a.cols; }
  COHORT_HD void operator()(i64 r) const { b.coeffs(r, k[2 * r], k[2 * r + 1]); }
};
struct LayerNormGradElement {  // item: element; items = rows * cols
  LayerNormBackwardRow b;
  const float* k;
  i64 cost() const { return 1; }
  COHORT_HD void operator()(i64 i) const {
    const i64 r = i / b.a.cols;
    const float v = b.grad(i, i % b.a.cols, b.mean[r], b.rstd[r], k[2 * r], k[2 * r + 1]);
    b.dx[i] = b.dx_add ? b.dx_add[i] + v : v;
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

// LayerNormParamGradCols's sums in two stages, for executors with kFineItems (the GPU), where its
// ceil(cols / 16) items would be a handful of threads each reading every row (the ViT's 256
// columns: 16 threads over 4160 rows; GPU review G2). Stage one: an item per (block of kRows rows,
// column), neighbouring items neighbouring columns (coalesced reads), its double sums written to
// scratch; stage two: an item per column adds its blocks' sums in block order. Each term is
// LayerNormParamGradCols's, in double; only the grouping of the additions differs, so dgamma and
// dbeta agree with it within double rounding before the final rounding to float.
struct LayerNormParamGradPartial {  // item: (row block, column); items = blocks(a) * cols
  static constexpr i64 kRows = 64;
  static i64 blocks(const LayerNormArgs& a) { return (a.rows + kRows - 1) / kRows; }
  LayerNormArgs a;
  const float* x;
  const float* dy;
  const float* mean;
  const float* rstd;
  double* part_g;  // [blocks, cols]: sum dy * xhat over the block's rows
  double* part_b;  // [blocks, cols]: sum dy
  i64 cost() const { return kRows; }
  COHORT_HD void operator()(i64 item) const {
    const i64 j = item % a.cols, r0 = item / a.cols * kRows;
    const i64 r1 = a.rows - r0 < kRows ? a.rows : r0 + kRows;
    double sg = 0.0, sb = 0.0;
    for (i64 r = r0; r < r1; ++r) {
      const float g = dy[r * a.cols + j];
      sb += g;
      sg += static_cast<double>(g) * ((x[r * a.cols + j] - mean[r]) * rstd[r]);
    }
    part_g[item] = sg;
    part_b[item] = sb;
  }
};

struct LayerNormParamGradFinish {  // item: column
  i64 cols, blocks;
  const double* part_g;
  const double* part_b;
  float* dgamma;  // nullable
  float* dbeta;   // nullable
  i64 cost() const { return blocks; }
  COHORT_HD void operator()(i64 j) const {
    double sg = 0.0, sb = 0.0;
    for (i64 b = 0; b < blocks; ++b) {
      sg += part_g[b * cols + j];
      sb += part_b[b * cols + j];
    }
    if (dgamma) dgamma[j] += static_cast<float>(sg);
    if (dbeta) dbeta[j] += static_cast<float>(sb);
  }
};

// The fine executors' layer_norm_backward: dx through LayerNormGradCoeffsRow and
// LayerNormGradElement, dgamma / dbeta through the two stages above. One scratch request (the
// executor contract): the coefficients (2 floats per row), then the stages' partial sums (2
// arrays of doubles; 2 * rows floats keep them 8-byte aligned).
template <class Exec>
void layer_norm_backward_fine(Exec& e, const calls::LayerNormBackward& c) {
  const bool params = c.dgamma || c.dbeta;
  const i64 rows = c.a.rows, blocks = LayerNormParamGradPartial::blocks(c.a);
  const i64 items = params ? blocks * c.a.cols : 0, coeffs = c.dx ? 2 * rows : 0;
  if (coeffs + items == 0) return;  // no rows, or nothing asked
  float* k = e.scratch(static_cast<std::size_t>(coeffs + 4 * items));
  double* part = reinterpret_cast<double*>(k + coeffs);
  if (c.dx) {
    const LayerNormBackwardRow b{c.a, c.x, c.dy, c.gamma, c.save_mean, c.save_rstd, c.dx, c.dx_add};
    e.for_each("cohort::layer_norm_backward", rows, LayerNormGradCoeffsRow{b, k});
    e.for_each("cohort::layer_norm_backward", rows * c.a.cols, LayerNormGradElement{b, k});
  }
  if (items == 0) return;
  e.for_each(
      "cohort::layer_norm_param_grad", items,
      LayerNormParamGradPartial{c.a, c.x, c.dy, c.save_mean, c.save_rstd, part, part + items});
  e.for_each("cohort::layer_norm_param_grad", c.a.cols,
             LayerNormParamGradFinish{c.a.cols, blocks, part, part + items, c.dgamma, c.dbeta});
}

template <class Exec>
void run(Exec& e, const calls::BatchNormForward& c) {
  e.for_each("cohort::batch_norm_stats", c.a.c,
             BatchNormStats{c.a, c.x, c.running_mean, c.running_var, c.save_mean, c.save_invstd});
  const BatchNormApply apply{c.a, c.x, c.gamma, c.beta, c.save_mean, c.save_invstd, c.y};
  if constexpr (has_fine_items_v<Exec>)
    e.for_each("cohort::batch_norm_apply", c.a.n * c.a.c * c.a.inner, BatchNormApplyElement{apply});
  else
    e.for_each("cohort::batch_norm_apply", c.a.n * c.a.c, apply);
}
template <class Exec>
void run(Exec& e, const calls::BatchNormBackward& c) {
  e.for_each("cohort::batch_norm_backward", c.a.c, BatchNormBackwardChannel{c});
}
template <class Exec>
void run(Exec& e, const calls::LayerNormForward& c) {
  const LayerNormForwardRow f{c.a,         c.x,         c.gamma,    c.beta, c.y,
                              c.save_mean, c.save_rstd, c.residual, c.sum};
  if constexpr (has_fine_items_v<Exec>) {
    e.for_each("cohort::layer_norm_forward", c.a.rows, LayerNormStatsRow{f});
    e.for_each("cohort::layer_norm_forward", c.a.rows * c.a.cols, LayerNormApplyElement{f});
  } else {
    e.for_each("cohort::layer_norm_forward", c.a.rows, f);
  }
}
template <class Exec>
void run(Exec& e, const calls::LayerNormBackward& c) {
  if constexpr (has_fine_items_v<Exec>) return layer_norm_backward_fine(e, c);
  if (c.dx)
    e.for_each(
        "cohort::layer_norm_backward", c.a.rows,
        LayerNormBackwardRow{c.a, c.x, c.dy, c.gamma, c.save_mean, c.save_rstd, c.dx, c.dx_add});
  if (c.dgamma || c.dbeta)
    e.for_each("cohort::layer_norm_param_grad",
               (c.a.cols + LayerNormParamGradCols::block - 1) / LayerNormParamGradCols::block,
               LayerNormParamGradCols{c.a, c.x, c.dy, c.save_mean, c.save_rstd, c.dgamma, c.dbeta});
}

}  // namespace cohort::kernels
