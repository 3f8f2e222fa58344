// Pooling family: pool2d_forward, pool2d_backward (max with argmax indices, average with either
// divisor rule), as PyTorch's max_pool2d and avg_pool2d.
#pragma once

#include <cmath>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Pooling.

struct PoolForwardRow {  // item: one output row (plane, oh): items = n * c * oh
  Pool2dArgs a;
  const float* x;
  float* y;
  std::int32_t* argmax;  // max pooling, nullable
  // Tap-major: for each window tap (p, q) in row-major order, one pass over the whole output
  // row. Each output sees its taps in the order ATen's per-window loop uses, so the same element
  // wins (the first maximum, a NaN over any number, the last NaN); but the inner loop runs over
  // independent outputs, which the compiler vectorises and the CPU overlaps, where a loop over one
  // window's taps is a serial chain of unpredictable comparisons.
  i64 cost() const { return a.ow * a.kh * a.kw; }
  COHORT_HD void operator()(i64 item) const {
    const i64 oh = item % a.oh;
    const i64 plane = item / a.oh;
    const float* in = x + plane * a.h * a.w;
    float* out = y + plane * a.oh * a.ow + oh * a.ow;
    const i64 ih_base = oh * a.stride_h - a.pad_h;
    if (a.kind == PoolKind::max) {
      std::int32_t* idx = argmax ? argmax + plane * a.oh * a.ow + oh * a.ow : nullptr;
      // Start at -inf with ATen's initial index: the window's first valid tap.
      i64 ih_first = ih_base;
      while (ih_first < 0) ih_first += a.dil_h;
      for (i64 ow = 0; ow < a.ow; ++ow) {
        out[ow] = -INFINITY;
        if (idx) {
          i64 iw_first = ow * a.stride_w - a.pad_w;
          while (iw_first < 0) iw_first += a.dil_w;
          idx[ow] = static_cast<std::int32_t>(ih_first * a.w + iw_first);
        }
      }
      for (i64 p = 0; p < a.kh; ++p) {
        const i64 ih = ih_base + p * a.dil_h;
        if (ih < 0 || ih >= a.h) continue;
        const float* row = in + ih * a.w;
        for (i64 q = 0; q < a.kw; ++q) {
          const i64 off = q * a.dil_w - a.pad_w;  // input column of output ow: ow * stride + off
          i64 lo, hi;
          valid_range(off, a.stride_w, a.w, a.ow, lo, hi);
          if (idx) {
            const std::int32_t base = static_cast<std::int32_t>(ih * a.w + off);
            for (i64 ow = lo; ow < hi; ++ow) {
              const float v = row[ow * a.stride_w + off];
              const bool take = (v > out[ow]) | (v != v);
              out[ow] = take ? v : out[ow];
              idx[ow] = take ? base + static_cast<std::int32_t>(ow * a.stride_w) : idx[ow];
            }
          } else {
            for (i64 ow = lo; ow < hi; ++ow) {
              const float v = row[ow * a.stride_w + off];
              out[ow] = (v > out[ow]) | (v != v) ? v : out[ow];
            }
          }
        }
      }
    } else {
      for (i64 ow = 0; ow < a.ow; ++ow) out[ow] = 0.0f;
      for (i64 p = 0; p < a.kh; ++p) {
        const i64 ih = ih_base + p;
        if (ih < 0 || ih >= a.h) continue;
        const float* row = in + ih * a.w;
        for (i64 q = 0; q < a.kw; ++q) {
          const i64 off = q - a.pad_w;
          i64 lo, hi;
          valid_range(off, a.stride_w, a.w, a.ow, lo, hi);
          for (i64 ow = lo; ow < hi; ++ow) out[ow] += row[ow * a.stride_w + off];
        }
      }
      for (i64 ow = 0; ow < a.ow; ++ow) {
        i64 h0, h1, w0, w1;
        out[ow] /= avg_window(oh, ow, h0, h1, w0, w1);
      }
    }
  }
  // ATen's avg_pool2d window: clipped to the padded input for the divisor (count_include_pad),
  // then to the input for the sum.
  COHORT_HD float avg_window(i64 oh, i64 ow, i64& h0, i64& h1, i64& w0, i64& w1) const {
    h0 = oh * a.stride_h - a.pad_h;
    w0 = ow * a.stride_w - a.pad_w;
    h1 = h0 + a.kh < a.h + a.pad_h ? h0 + a.kh : a.h + a.pad_h;
    w1 = w0 + a.kw < a.w + a.pad_w ? w0 + a.kw : a.w + a.pad_w;
    const i64 padded = (h1 - h0) * (w1 - w0);
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > a.h) h1 = a.h;
    if (w1 > a.w) w1 = a.w;
    return static_cast<float>(a.count_include_pad ? padded : (h1 - h0) * (w1 - w0));
  }
};

struct PoolBackwardPlane {  // item: one input plane of dx: items = n * c
  Pool2dArgs a;
  const float* dy;
  const std::int32_t* argmax;  // max pooling
  float* dx;
  i64 cost() const { return a.h * a.w + a.oh * a.ow; }
  COHORT_HD void operator()(i64 plane) const {
    float* out = dx + plane * a.h * a.w;
    const float* g = dy + plane * a.oh * a.ow;
    for (i64 i = 0; i < a.h * a.w; ++i) out[i] = 0.0f;
    if (a.kind == PoolKind::max) {
      const std::int32_t* idx = argmax + plane * a.oh * a.ow;
      for (i64 o = 0; o < a.oh * a.ow; ++o) out[idx[o]] += g[o];
    } else {
      const PoolForwardRow win{a, nullptr, nullptr, nullptr};
      for (i64 oh = 0; oh < a.oh; ++oh)
        for (i64 ow = 0; ow < a.ow; ++ow) {
          i64 h0, h1, w0, w1;
          const float v = g[oh * a.ow + ow] / win.avg_window(oh, ow, h0, h1, w0, w1);
          for (i64 ih = h0; ih < h1; ++ih)
            for (i64 iw = w0; iw < w1; ++iw) out[ih * a.w + iw] += v;
        }
    }
  }
};

template <class Exec>
void run(Exec& e, const calls::Pool2dForward& c) {
  e.for_each("cohort::pool2d_forward", c.a.n * c.a.c * c.a.oh, PoolForwardRow{c.a, c.x, c.y, c.argmax});
}
template <class Exec>
void run(Exec& e, const calls::Pool2dBackward& c) {
  e.for_each("cohort::pool2d_backward", c.a.n * c.a.c, PoolBackwardPlane{c.a, c.dy, c.argmax, c.dx});
}

}  // namespace cohort::kernels
