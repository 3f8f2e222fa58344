// Reduction family: reduce_sum, reduce_max, argmax over the last axis, one work item per row.
// Sums accumulate in double; max and argmax let NaN win (torch.max), argmax takes the first
// maximal column.
#pragma once

#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

struct RowSumItem {  // item: row; accumulated in double
  const float* x;
  i64 cols;
  float* out;
  i64 cost() const { return cols; }
  COHORT_HD void operator()(i64 r) const {
    double acc = 0.0;
    for (i64 j = 0; j < cols; ++j) acc += x[r * cols + j];
    out[r] = static_cast<float>(acc);
  }
};

struct RowMaxItem {  // item: row; NaN wins, as in torch.max
  const float* x;
  i64 cols;
  float* out;
  i64 cost() const { return cols; }
  COHORT_HD void operator()(i64 r) const {
    float m = x[r * cols];
    for (i64 j = 1; j < cols && m == m; ++j) {
      const float v = x[r * cols + j];
      if (v > m || v != v) m = v;
    }
    out[r] = m;
  }
};

struct RowArgmaxItem {  // item: row; the first maximal column, NaN wins
  const float* x;
  i64 cols;
  std::int64_t* out;
  i64 cost() const { return cols; }
  COHORT_HD void operator()(i64 r) const {
    i64 best = 0;
    float m = x[r * cols];
    for (i64 j = 1; j < cols && m == m; ++j) {
      const float v = x[r * cols + j];
      if (v > m || v != v) {
        m = v;
        best = j;
      }
    }
    out[r] = best;
  }
};

template <class Exec>
void run(Exec& e, const calls::ReduceSum& c) {
  e.for_each("cohort::reduce_sum", static_cast<i64>(c.rows),
             RowSumItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Exec>
void run(Exec& e, const calls::ReduceMax& c) {
  e.for_each("cohort::reduce_max", static_cast<i64>(c.rows),
             RowMaxItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Exec>
void run(Exec& e, const calls::Argmax& c) {
  e.for_each("cohort::argmax", static_cast<i64>(c.rows),
             RowArgmaxItem{c.x, static_cast<i64>(c.cols), c.out});
}

}  // namespace cohort::kernels
