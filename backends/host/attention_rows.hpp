// The T x T passes of the host's attention (attention.cpp): the softmax of each row of the scores,
// the probabilities again from the log-sum-exp, and dS. Internal header, included by attention.cpp
// with COHORT_ATTENTION_ROWS defined as GCC's target_clones attribute, and by
// tests/backends/host/isa_builds.cpp without it, compiled once per instruction set, to
// check that every clone gives the same bits. Everything is in an anonymous namespace: each
// includer has its own copies, so no two instruction sets' copies can be merged by the linker.
//
// These passes (the softmax, the probabilities again, dS) are a fifth of the op's time at the
// ViT's shapes with baseline x86-64 (SSE) code, so they are built three times, for AVX-512
// (x86-64-v4), AVX2 (v3) and the baseline, and the loader picks the one the CPU runs (GCC's
// target_clones, an ifunc). Every clone computes the same IEEE operations in the same order, so
// the results are the same bits on every CPU: the file is built with -ffp-contract=off (no clone
// fuses a multiply and an add), fast_exp is straight-line float code (common/fast_math.hpp), and
// the row sums are lane_sum's, whose order the source fixes (an OpenMP SIMD reduction, as
// kernels::sum_of's, would add in an order that depends on the vector width).

#pragma once

#include <cmath>
#include <cstdint>

#include "common/ops/softmax_loss.hpp"

#ifndef COHORT_ATTENTION_ROWS
#define COHORT_ATTENTION_ROWS
#endif

namespace cohort::host {
namespace {
using i64 = std::int64_t;

// The sum of p[0, n): 16 running float sums (sum k takes p[j + k]), then the 16 and the tail added
// in double, in order. Each running sum is its own chain, so the compiler vectorises the loop
// without reordering any addition, whatever the vector width.
inline double lane_sum(const float* p, i64 n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  i64 j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += p[j + k];
  double s = 0.0;
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  for (; j < n; ++j) s += p[j];
  return s;
}

// Each row of s [t, t] turned into its softmax in place (softmax_forward's row,
// common/ops/softmax_loss.hpp, with lane_sum's sum), its log-sum-exp written to lse[row].
COHORT_ATTENTION_ROWS void softmax_rows(float* s, i64 t, float* lse) {
  for (i64 i = 0; i < t; ++i) {
    float* row = s + i * t;
    float m = -INFINITY;
    for (i64 j = 0; j < t; ++j)
      if (row[j] > m || row[j] != row[j]) m = row[j];
    kernels::exp_shifted(row, 1, row, 1, t, m);
    const double sum = lane_sum(row, t);
    const float inv = static_cast<float>(1.0 / sum);
    for (i64 j = 0; j < t; ++j) row[j] *= inv;
    lse[i] = m + static_cast<float>(std::log(sum));
  }
}

// The scores s [t, t] turned back into probabilities, exp(s - lse[row]), in place.
COHORT_ATTENTION_ROWS void probabilities_rows(float* s, i64 t, const float* lse) {
  for (i64 i = 0; i < t; ++i) kernels::exp_shifted(s + i * t, 1, s + i * t, 1, t, lse[i]);
}

// dp [t, t] turned into dS = P (dP - delta[row]) in place.
COHORT_ATTENTION_ROWS void score_grad_rows(float* dp, const float* p, i64 t, const float* delta) {
  for (i64 i = 0; i < t; ++i) {
    const float* prow = p + i * t;
    float* row = dp + i * t;
    const float di = delta[i];
    for (i64 j = 0; j < t; ++j) row[j] = prow[j] * (row[j] - di);
  }
}

}  // namespace
}  // namespace cohort::host
