// Attention family: attention_forward, attention_backward, scaled dot-product attention over
// multi-head attention's packed projection (layout: AttentionArgs in
// cohort/backend/layer_args.hpp). One fused op: the T x T scores and probabilities are never
// written to memory; forward keeps each query row's log-sum-exp and backward recomputes the
// probabilities from it, as FlashAttention and PyTorch's CPU flash kernel do.
//
// The shared code here is one work item per query row (forward, backward's dq) and per key row
// (backward's dk and dv), each looping over the other side's rows with dh-long dot products: no
// scratch, no atomics, the same order on every executor. The host takes both ops first with
// oneDNN sgemm per head (backends/host/attention.cpp); the GPU runs these items.
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
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/fast_math.hpp"
#include "common/ops/common.hpp"

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

template <class Exec>
void run(Exec& e, const calls::AttentionForward& c) {
  const AttentionIndex ix{c.a};
  e.for_each("cohort::attention_forward", c.a.n * c.a.h * c.a.t,
             AttentionForwardRow{ix, c.qkv, c.out, c.lse});
}
template <class Exec>
void run(Exec& e, const calls::AttentionBackward& c) {
  const AttentionIndex ix{c.a};
  const i64 rows = c.a.n * c.a.h * c.a.t;
  e.for_each("cohort::attention_backward_query", rows,
             AttentionBackwardQuery{ix, c.qkv, c.out, c.dout, c.lse, c.delta, c.dqkv});
  e.for_each("cohort::attention_backward_key", rows,
             AttentionBackwardKey{ix, c.qkv, c.dout, c.lse, c.delta, c.dqkv});
}

}  // namespace cohort::kernels
