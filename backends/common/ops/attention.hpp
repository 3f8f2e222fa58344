// Attention family: attention_forward, attention_backward, scaled dot-product attention over
// multi-head attention's packed projection (layout: AttentionArgs in
// cohort/backend/layer_args.hpp). One fused op: the T x T scores and probabilities are never
// written to memory; forward keeps each query row's log-sum-exp and backward recomputes the
// probabilities from it, as FlashAttention and PyTorch's CPU flash kernel do.
//
// Two forms here. The items: one per query row (forward, backward's dq) and per key row
// (backward's dk and dv), each looping over the other side's rows with dh-long dot products: no
// scratch, no atomics. The GEMM form (below, for executors with kFineItems: the GPU and its
// Thrust test device): per head, batched GEMMs over the batch entries with the T x T scores in
// scratch, and the passes over the scores as items. The host takes both ops first with oneDNN
// sgemm per head and thread (backends/host/attention.cpp), the GEMM form's algorithm.
//
// Each row's softmax: forward makes one online pass for the maximum m and the sum l of
// exp(s_j - m) (l rescaled when m grows), lse = m + log(l), then a second pass for
// out = sum_j exp(s_j - lse) v_j. Backward, with D_i = dout_i . out_i (delta):
//   P_ij = exp(s_ij - lse_i),  dP_ij = dout_i . v_j,  dS_ij = P_ij (dP_ij - D_i),
//   dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_i dS_ij q_i,  dv_j = sum_i P_ij dout_i.
// NaN in a row's scores makes that row NaN (as torch.softmax); a -inf score gets probability 0,
// and a row whose scores are all -inf is NaN (lse = -inf, as torch.softmax of all -inf).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/fast_math.hpp"
#include "common/ops/common.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/softmax_loss.hpp"

namespace cohort::kernels {

// Offsets into the packed tensors, and the item <-> (batch, head, row) mapping: item = (n * h +
// head) * t + row, which is also the row's index in lse and delta.
struct AttentionIndex {
  AttentionArgs a;
  COHORT_HD i64 width() const { return a.h * a.dh; }  // E
  // q (part 0), k (1) or v (2) of token `row` of batch entry nn, head hh.
  COHORT_HD i64 qkv(i64 nn, i64 row, i64 part, i64 hh) const {
    return ((nn * a.t + row) * 3 + part) * width() + hh * a.dh;
  }
  COHORT_HD i64 out(i64 nn, i64 row, i64 hh) const {
    return (nn * a.t + row) * width() + hh * a.dh;
  }
};

COHORT_HD float dot_of(const float* x, const float* y, i64 n) {
  float s = 0.0f;
  for (i64 d = 0; d < n; ++d) s += x[d] * y[d];
  return s;
}

struct AttentionForwardRow {  // item: query row
  AttentionIndex ix;
  const float* qkv;
  float* out;
  float* lse;
  i64 cost() const { return 4 * ix.a.t * ix.a.dh; }
  COHORT_HD void operator()(i64 item) const {
    const i64 t = ix.a.t, dh = ix.a.dh, b = item / t, i = item % t;
    const i64 nn = b / ix.a.h, hh = b % ix.a.h;
    const float* q = qkv + ix.qkv(nn, i, 0, hh);
    float m = -INFINITY, l = 0.0f;
    for (i64 j = 0; j < t; ++j) {
      const float s = ix.a.scale * dot_of(q, qkv + ix.qkv(nn, j, 1, hh), dh);
      if (s > m) {
        l = l * fast_exp(m - s) + 1.0f;
        m = s;
      } else if (s != -INFINITY) {  // a -inf score adds 0 (and exp(-inf - -inf) would be NaN)
        l += fast_exp(s - m);       // a NaN s makes l NaN
      }
    }
    const float row_lse = m + ::logf(l);
    lse[item] = row_lse;
    float* o = out + ix.out(nn, i, hh);
    for (i64 d = 0; d < dh; ++d) o[d] = 0.0f;
    for (i64 j = 0; j < t; ++j) {
      const float p = fast_exp(ix.a.scale * dot_of(q, qkv + ix.qkv(nn, j, 1, hh), dh) - row_lse);
      const float* v = qkv + ix.qkv(nn, j, 2, hh);
      for (i64 d = 0; d < dh; ++d) o[d] += p * v[d];
    }
  }
};

struct AttentionBackwardQuery {  // item: query row; writes delta and dq
  AttentionIndex ix;
  const float* qkv;
  const float* out;
  const float* dout;
  const float* lse;
  float* delta;
  float* dqkv;
  i64 cost() const { return 4 * ix.a.t * ix.a.dh; }
  COHORT_HD void operator()(i64 item) const {
    const i64 t = ix.a.t, dh = ix.a.dh, b = item / t, i = item % t;
    const i64 nn = b / ix.a.h, hh = b % ix.a.h;
    const float* q = qkv + ix.qkv(nn, i, 0, hh);
    const float* go = dout + ix.out(nn, i, hh);
    const float di = dot_of(go, out + ix.out(nn, i, hh), dh);
    delta[item] = di;
    float* dq = dqkv + ix.qkv(nn, i, 0, hh);
    for (i64 d = 0; d < dh; ++d) dq[d] = 0.0f;
    for (i64 j = 0; j < t; ++j) {
      const float* k = qkv + ix.qkv(nn, j, 1, hh);
      const float p = fast_exp(ix.a.scale * dot_of(q, k, dh) - lse[item]);
      const float ds = p * (dot_of(go, qkv + ix.qkv(nn, j, 2, hh), dh) - di);
      for (i64 d = 0; d < dh; ++d) dq[d] += ix.a.scale * ds * k[d];
    }
  }
};

struct AttentionBackwardKey {  // item: key row; reads delta, writes dk and dv
  AttentionIndex ix;
  const float* qkv;
  const float* dout;
  const float* lse;
  const float* delta;
  float* dqkv;
  i64 cost() const { return 4 * ix.a.t * ix.a.dh; }
  COHORT_HD void operator()(i64 item) const {
    const i64 t = ix.a.t, dh = ix.a.dh, b = item / t, j = item % t;
    const i64 nn = b / ix.a.h, hh = b % ix.a.h;
    const float* k = qkv + ix.qkv(nn, j, 1, hh);
    const float* v = qkv + ix.qkv(nn, j, 2, hh);
    float* dk = dqkv + ix.qkv(nn, j, 1, hh);
    float* dv = dqkv + ix.qkv(nn, j, 2, hh);
    for (i64 d = 0; d < dh; ++d) dk[d] = dv[d] = 0.0f;
    for (i64 i = 0; i < t; ++i) {
      const float* q = qkv + ix.qkv(nn, i, 0, hh);
      const float* go = dout + ix.out(nn, i, hh);
      const i64 row = b * t + i;
      const float p = fast_exp(ix.a.scale * dot_of(q, k, dh) - lse[row]);
      const float ds = p * (dot_of(go, v, dh) - delta[row]);
      for (i64 d = 0; d < dh; ++d) {
        dv[d] += p * go[d];
        dk[d] += ix.a.scale * ds * q[d];
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// The GEMM form, for executors with kFineItems (the GPU). There a query row per item is one
// thread doing 2 T dh-long dot products in series (4 T for backward), and threads of one head all
// read the same keys and values. Instead, per head, the products run as batched GEMMs over the
// batch entries (the host's per-head algorithm, backends/host/attention.cpp), with the T x T
// scores of every (entry, head) in scratch ([n, h, t, t]: 8.7 MB at the ViT's shapes, 17.3 MB for
// backward's two), and the passes over them as items: the softmax per row, exp(s - lse) and dS
// per element, delta per row. The same math as the items above; the sums differ in order only
// (the GEMM's blocking), as the host's do.

struct AttentionSoftmaxRow {  // item: row of the scores; softmax in place, lse[row] written
  float* s;
  i64 t;
  float* lse;
  i64 cost() const { return 3 * t; }
  COHORT_HD void operator()(i64 item) const {
    float* row = s + item * t;
    float m = -INFINITY;
    for (i64 j = 0; j < t; ++j)
      if (row[j] > m || row[j] != row[j]) m = row[j];
    exp_shifted(row, 1, row, 1, t, m);
    double sum = 0.0;
    for (i64 j = 0; j < t; ++j) sum += row[j];
    const float inv = static_cast<float>(1.0 / sum);
    for (i64 j = 0; j < t; ++j) row[j] *= inv;
    lse[item] = m + static_cast<float>(::log(sum));
  }
};

struct AttentionProbElement {  // item: score; the probability again, exp(s - lse[row])
  float* p;
  i64 t;
  const float* lse;
  i64 cost() const { return 1; }
  COHORT_HD void operator()(i64 i) const { p[i] = fast_exp(p[i] - lse[i / t]); }
};

struct AttentionDeltaRow {  // item: query row; delta = dout . out
  AttentionIndex ix;
  const float* out;
  const float* dout;
  float* delta;
  i64 cost() const { return ix.a.dh; }
  COHORT_HD void operator()(i64 item) const {
    const i64 t = ix.a.t, b = item / t, i = item % t, nn = b / ix.a.h, hh = b % ix.a.h;
    delta[item] = dot_of(dout + ix.out(nn, i, hh), out + ix.out(nn, i, hh), ix.a.dh);
  }
};

struct AttentionScoreGradElement {  // item: score; dP turned into dS = P (dP - delta[row])
  float* dp;
  const float* p;
  i64 t;
  const float* delta;
  i64 cost() const { return 1; }
  COHORT_HD void operator()(i64 i) const { dp[i] = p[i] * (dp[i] - delta[i / t]); }
};

// One head's product over the batch entries: c_nn = alpha op(a_nn) op(b_nn) for nn < n, row-major
// with the leading dimensions given; entry nn's operands lie sa, sb, sc floats after entry 0's.
struct HeadGemm {
  bool ta, tb;
  i64 m, n, k;
  float alpha;
  const float* a;
  i64 lda, sa;
  const float* b;
  i64 ldb, sb;
  float* c;
  i64 ldc, sc;
};
template <class Exec>
void head_gemm(Exec& e, i64 batch, const HeadGemm& h) {
  calls::GemmBatched g;
  g.trans_a = h.ta;
  g.trans_b = h.tb;
  g.m = h.m;
  g.n = h.n;
  g.k = h.k;
  g.alpha = h.alpha;
  g.a = h.a;
  g.lda = h.lda;
  g.b = h.b;
  g.ldb = h.ldb;
  g.beta = 0.0f;
  g.c = h.c;
  g.ldc = h.ldc;
  g.batch = batch;
  g.stride_a = h.sa;
  g.stride_b = h.sb;
  g.stride_c = h.sc;
  run(e, g);
}

template <class Exec>
void attention_forward_gemm(Exec& e, const calls::AttentionForward& c) {
  const AttentionIndex ix{c.a};
  const i64 n = c.a.n, h = c.a.h, t = c.a.t, dh = c.a.dh, e3 = 3 * ix.width(), tt = t * t;
  float* s = e.scratch(static_cast<std::size_t>(n * h * tt));  // [n, h, t, t]
  for (i64 hh = 0; hh < h; ++hh)                               // S = scale Q K^T
    head_gemm(e, n,
              {false, true, t, t, dh, c.a.scale, c.qkv + ix.qkv(0, 0, 0, hh), e3, t * e3,
               c.qkv + ix.qkv(0, 0, 1, hh), e3, t * e3, s + hh * tt, t, h * tt});
  e.for_each("cohort::attention_forward", n * h * t, AttentionSoftmaxRow{s, t, c.lse});
  for (i64 hh = 0; hh < h; ++hh)  // out = P V
    head_gemm(e, n,
              {false, false, t, dh, t, 1.0f, s + hh * tt, t, h * tt, c.qkv + ix.qkv(0, 0, 2, hh),
               e3, t * e3, c.out + ix.out(0, 0, hh), ix.width(), t * ix.width()});
}

template <class Exec>
void attention_backward_gemm(Exec& e, const calls::AttentionBackward& c) {
  const AttentionIndex ix{c.a};
  const i64 n = c.a.n, h = c.a.h, t = c.a.t, dh = c.a.dh, e1 = ix.width(), e3 = 3 * e1;
  const i64 tt = t * t, all = n * h * tt;
  float* p = e.scratch(static_cast<std::size_t>(2 * all));  // P and dP, each [n, h, t, t]
  float* dp = p + all;
  for (i64 hh = 0; hh < h; ++hh)  // the scores again
    head_gemm(e, n,
              {false, true, t, t, dh, c.a.scale, c.qkv + ix.qkv(0, 0, 0, hh), e3, t * e3,
               c.qkv + ix.qkv(0, 0, 1, hh), e3, t * e3, p + hh * tt, t, h * tt});
  e.for_each("cohort::attention_backward", all, AttentionProbElement{p, t, c.lse});
  for (i64 hh = 0; hh < h; ++hh) {
    const float* v = c.qkv + ix.qkv(0, 0, 2, hh);
    const float* go = c.dout + ix.out(0, 0, hh);
    // dV = P^T dO; dP = dO V^T
    head_gemm(e, n,
              {true, false, t, dh, t, 1.0f, p + hh * tt, t, h * tt, go, e1, t * e1,
               c.dqkv + ix.qkv(0, 0, 2, hh), e3, t * e3});
    head_gemm(
        e, n,
        {false, true, t, t, dh, 1.0f, go, e1, t * e1, v, e3, t * e3, dp + hh * tt, t, h * tt});
  }
  e.for_each("cohort::attention_backward", n * h * t,
             AttentionDeltaRow{ix, c.out, c.dout, c.delta});
  e.for_each("cohort::attention_backward", all, AttentionScoreGradElement{dp, p, t, c.delta});
  for (i64 hh = 0; hh < h; ++hh) {  // dQ = scale dS K; dK = scale dS^T Q
    head_gemm(e, n,
              {false, false, t, dh, t, c.a.scale, dp + hh * tt, t, h * tt,
               c.qkv + ix.qkv(0, 0, 1, hh), e3, t * e3, c.dqkv + ix.qkv(0, 0, 0, hh), e3, t * e3});
    head_gemm(e, n,
              {true, false, t, dh, t, c.a.scale, dp + hh * tt, t, h * tt,
               c.qkv + ix.qkv(0, 0, 0, hh), e3, t * e3, c.dqkv + ix.qkv(0, 0, 1, hh), e3, t * e3});
  }
}

template <class Exec>
void run(Exec& e, const calls::AttentionForward& c) {
  if constexpr (has_fine_items_v<Exec>) {
    attention_forward_gemm(e, c);
  } else {
    const AttentionIndex ix{c.a};
    e.for_each("cohort::attention_forward", c.a.n * c.a.h * c.a.t,
               AttentionForwardRow{ix, c.qkv, c.out, c.lse});
  }
}
template <class Exec>
void run(Exec& e, const calls::AttentionBackward& c) {
  if constexpr (has_fine_items_v<Exec>) return attention_backward_gemm(e, c);
  const AttentionIndex ix{c.a};
  const i64 rows = c.a.n * c.a.h * c.a.t;
  e.for_each("cohort::attention_backward_query", rows,
             AttentionBackwardQuery{ix, c.qkv, c.out, c.dout, c.lse, c.delta, c.dqkv});
  e.for_each("cohort::attention_backward_key", rows,
             AttentionBackwardKey{ix, c.qkv, c.dout, c.lse, c.delta, c.dqkv});
}

}  // namespace cohort::kernels
