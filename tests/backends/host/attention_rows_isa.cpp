// backends/host/attention_rows.hpp compiled for one instruction set (tests/backends/host/
// CMakeLists.txt builds this file three times: baseline x86-64, x86-64-v3 and x86-64-v4, with the
// flags attention.cpp has), behind one entry point named by ROWS_ENTRY.
#include <cstdint>

#include "host/attention_rows.hpp"

// The three passes on one head's [t, t] buffers: s to its softmax (lse written), then p (a copy of
// the scores) to the probabilities from lse, then dp to dS.
void ROWS_ENTRY(float* s, float* p, float* dp, std::int64_t t, float* lse, const float* delta) {
  cohort::host::softmax_rows(s, t, lse);
  cohort::host::probabilities_rows(p, t, lse);
  cohort::host::score_grad_rows(dp, p, t, delta);
}
