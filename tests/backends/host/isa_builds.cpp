// The host's per-instruction-set code (backends/host/attention_rows.hpp, activation_spans.hpp)
// compiled for one instruction set: tests/backends/host/CMakeLists.txt builds this file three
// times (baseline x86-64, x86-64-v3 and x86-64-v4, with the flags the library's files have), each
// with its entry points suffixed by ISA (base, v3, v4).
#include <cstdint>

#include "host/activation_spans.hpp"
#include "host/attention_rows.hpp"

#define COHORT_CAT2(a, b) a##_##b
#define COHORT_CAT(a, b) COHORT_CAT2(a, b)

// The three attention passes on one head's [t, t] buffers: s to its softmax (lse written), then p
// (a copy of the scores) to the probabilities from lse, then dp to dS.
void COHORT_CAT(attention_rows, ISA)(float* s, float* p, float* dp, std::int64_t t, float* lse,
                                     const float* delta) {
  cohort::host::softmax_rows(s, t, lse);
  cohort::host::probabilities_rows(p, t, lse);
  cohort::host::score_grad_rows(dp, p, t, delta);
}

void COHORT_CAT(activation_span, ISA)(cohort::Activation f, float alpha, const float* x, float* y,
                                      const float* dy, float* dx, std::int64_t n) {
  cohort::host::activation_forward_span(f, alpha, x, y, n);
  cohort::host::activation_backward_span(f, alpha, x, y, dy, dx, n);
}

// bias_add's plane item then its row item on the same data: p [rows, n], bias [n].
void COHORT_CAT(bias_act_spans, ISA)(cohort::Activation f, float alpha, const float* bias, float* p,
                                     std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    cohort::host::bias_act_plane_span(f, alpha, bias[r % n], p + r * n, n);
    cohort::host::bias_act_row_span(f, alpha, r % 2 ? bias : nullptr, p + r * n, n);
  }
}

// bias_act_backward on [rows, n] as the host runs it: blocks of kGradColumns columns, dx written
// and each block's sums added to dbias.
void COHORT_CAT(bias_act_grad, ISA)(cohort::Activation f, float alpha, const float* x,
                                    const float* y, const float* dy, float* dx, std::int64_t rows,
                                    std::int64_t n, float* dbias) {
  const std::int64_t width = cohort::host::kGradColumns;
  for (std::int64_t c0 = 0; c0 < n; c0 += width) {
    const std::int64_t m = n - c0 < width ? n - c0 : width;
    double acc[cohort::host::kGradColumns] = {};
    cohort::host::bias_act_grad_columns_span(f, alpha, x + c0, y + c0, dy + c0, dx + c0, rows, n, m,
                                             acc);
    for (std::int64_t k = 0; k < m; ++k) dbias[c0 + k] += static_cast<float>(acc[k]);
  }
}
