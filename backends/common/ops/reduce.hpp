// Reduction family: reduce_sum, reduce_sum_sq, reduce_max, argmax over the last axis, one work item per row.
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

struct RowSumSqItem {  // item: row; each square and the sum in double
  const float* x;
  i64 cols;
  float* out;
  i64 cost() const { return cols; }
  COHORT_HD void operator()(i64 r) const {
    double acc = 0.0;
    for (i64 j = 0; j < cols; ++j) {
      const double v = x[r * cols + j];
      acc += v * v;
    }
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

// One work item per row of the call's [rows, cols] matrix.
template <class Item, class Exec, class Call>
void for_each_row(Exec& e, const char* label, const Call& c) {
  e.for_each(label, static_cast<i64>(c.rows), Item{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Exec>
void run(Exec& e, const calls::ReduceSum& c) {
  for_each_row<RowSumItem>(e, "cohort::reduce_sum", c);
}
template <class Exec>
void run(Exec& e, const calls::ReduceSumSq& c) {
  for_each_row<RowSumSqItem>(e, "cohort::reduce_sum_sq", c);
}
template <class Exec>
void run(Exec& e, const calls::ReduceMax& c) {
  for_each_row<RowMaxItem>(e, "cohort::reduce_max", c);
}
template <class Exec>
void run(Exec& e, const calls::Argmax& c) {
  for_each_row<RowArgmaxItem>(e, "cohort::argmax", c);
}

}  // namespace cohort::kernels
