// Reshaping family: permute (any axis permutation up to rank 6) and slice_copy (row blocks along
// one axis, optionally broadcast or accumulated). No arithmetic beyond the accumulate: results are
// exact on every backend.
#pragma once

#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Data movement: axis permutation and row-block copies (no arithmetic: results are exact on
// every backend).

// item: a chunk of up to `chunk` consecutive elements of one output row (the last output axis);
// items = rows * chunks_per_row. Chunks rather than whole rows so that a permutation with few,
// long rows still spreads over many GPU threads; on the host a chunk is long enough that the
// per-item index arithmetic is noise. Writes are contiguous; reads stride by in_stride[rank - 1]
// (1 when the last axis stays last).
struct PermuteChunk {
  static constexpr i64 chunk = 1024;
  int rank;
  i64 out_dims[PermuteArgs::max_rank];   // the output's extents
  i64 in_stride[PermuteArgs::max_rank];  // x's element stride along output axis a
  i64 chunks_per_row;
  const float* x;
  float* out;
  i64 cost() const { return chunk; }
  COHORT_HD void operator()(i64 item) const {
    const i64 row = item / chunks_per_row;
    const i64 cols = out_dims[rank - 1];
    const i64 c0 = (item % chunks_per_row) * chunk;
    const i64 c1 = c0 + chunk < cols ? c0 + chunk : cols;
    i64 src = 0, r = row;  // row -> its index along each output axis but the last
    for (int a = rank - 2; a >= 0; --a) {
      src += (r % out_dims[a]) * in_stride[a];
      r /= out_dims[a];
    }
    const i64 s = in_stride[rank - 1];
    float* o = out + row * cols;
    if (s == 1) {
      for (i64 c = c0; c < c1; ++c) o[c] = x[src + c];
    } else {
      for (i64 c = c0; c < c1; ++c) o[c] = x[src + c * s];
    }
  }
};

struct SliceCopyRow {  // item: one row (o, j) of `inner` elements: items = outer * length
  SliceCopyArgs a;
  const float* src;
  float* dst;
  i64 cost() const { return a.inner; }
  COHORT_HD void operator()(i64 item) const {
    const i64 o = item / a.length, j = item % a.length;
    const float* s = src + ((a.src_broadcast ? 0 : o) * a.src_len + a.src_start + j) * a.inner;
    float* d = dst + (o * a.dst_len + a.dst_start + j) * a.inner;
    if (a.accumulate) {
      for (i64 i = 0; i < a.inner; ++i) d[i] += s[i];
    } else {
      for (i64 i = 0; i < a.inner; ++i) d[i] = s[i];
    }
  }
};

template <class Exec>
void run(Exec& e, const calls::Permute& c) {
  const PermuteArgs& a = c.a;
  PermuteChunk f{};
  f.rank = a.rank;
  i64 in_stride[PermuteArgs::max_rank];
  i64 stride = 1;
  for (int k = a.rank - 1; k >= 0; --k) {  // x is contiguous in its own axis order
    in_stride[k] = stride;
    stride *= a.dims[k];
  }
  for (int k = 0; k < a.rank; ++k) {
    f.out_dims[k] = a.dims[a.perm[k]];
    f.in_stride[k] = in_stride[a.perm[k]];
  }
  const i64 cols = f.out_dims[a.rank - 1];
  if (stride == 0 || cols == 0) return;
  f.chunks_per_row = (cols + PermuteChunk::chunk - 1) / PermuteChunk::chunk;
  f.x = c.x;
  f.out = c.out;
  e.for_each("cohort::permute", stride / cols * f.chunks_per_row, f);
}
template <class Exec>
void run(Exec& e, const calls::SliceCopy& c) {
  e.for_each("cohort::slice_copy", c.a.outer * c.a.length, SliceCopyRow{c.a, c.src, c.dst});
}

}  // namespace cohort::kernels
