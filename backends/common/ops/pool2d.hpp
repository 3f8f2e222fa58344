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

// The same two ops one element per item, for executors with kFineItems (the GPU). Each output
// (forward) or input (backward) element sees the same operations in the same order as in
// PoolForwardRow / PoolBackwardPlane, so the results are bit-identical.
struct PoolForwardElem {  // item: one output element (plane, oh, ow): items = n * c * oh * ow
  Pool2dArgs a;
  const float* x;
  float* y;
  std::int32_t* argmax;  // max pooling, nullable
  i64 cost() const { return a.kh * a.kw; }
  COHORT_HD void operator()(i64 item) const {
    const i64 ow = item % a.ow;
    const i64 oh = (item / a.ow) % a.oh;
    const i64 plane = item / (a.ow * a.oh);
    const float* in = x + plane * a.h * a.w;
    const i64 ih_base = oh * a.stride_h - a.pad_h, iw_base = ow * a.stride_w - a.pad_w;
    if (a.kind == PoolKind::max) {
      i64 ih_first = ih_base, iw_first = iw_base;  // ATen's initial index: the first valid tap
      while (ih_first < 0) ih_first += a.dil_h;
      while (iw_first < 0) iw_first += a.dil_w;
      float best = -INFINITY;
      std::int32_t at = static_cast<std::int32_t>(ih_first * a.w + iw_first);
      for (i64 p = 0; p < a.kh; ++p) {
        const i64 ih = ih_base + p * a.dil_h;
        if (ih < 0 || ih >= a.h) continue;
        for (i64 q = 0; q < a.kw; ++q) {
          const i64 iw = iw_base + q * a.dil_w;
          if (iw < 0 || iw >= a.w) continue;
          const float v = in[ih * a.w + iw];
          if ((v > best) | (v != v)) {
            best = v;
            at = static_cast<std::int32_t>(ih * a.w + iw);
          }
        }
      }
      y[item] = best;
      if (argmax) argmax[item] = at;
    } else {
      float sum = 0.0f;
      for (i64 p = 0; p < a.kh; ++p) {
        const i64 ih = ih_base + p;
        if (ih < 0 || ih >= a.h) continue;
        for (i64 q = 0; q < a.kw; ++q) {
          const i64 iw = iw_base + q;
          if (iw >= 0 && iw < a.w) sum += in[ih * a.w + iw];
        }
      }
      i64 h0, h1, w0, w1;
      y[item] = sum / PoolForwardRow{a, nullptr, nullptr, nullptr}.avg_window(oh, ow, h0, h1, w0, w1);
    }
  }
};

struct PoolBackwardElem {  // item: one input element of dx (plane, ih, iw): items = n * c * h * w
  Pool2dArgs a;
  const float* dy;
  const std::int32_t* argmax;  // max pooling
  float* dx;
  i64 cost() const { return a.kh * a.kw; }
  // The outputs whose window (dilation `dil`) can hold input index i: [lo, hi].
  COHORT_HD static void covering(i64 i, i64 k, i64 stride, i64 pad, i64 dil, i64 n_out, i64& lo,
                                 i64& hi) {
    const i64 first = i + pad - (k - 1) * dil;
    lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    hi = (i + pad) / stride;
    if (hi > n_out - 1) hi = n_out - 1;
  }
  COHORT_HD void operator()(i64 item) const {
    const i64 iw = item % a.w;
    const i64 ih = (item / a.w) % a.h;
    const i64 plane = item / (a.w * a.h);
    const float* g = dy + plane * a.oh * a.ow;
    const bool max = a.kind == PoolKind::max;
    i64 oh0, oh1, ow0, ow1;
    covering(ih, a.kh, a.stride_h, a.pad_h, max ? a.dil_h : 1, a.oh, oh0, oh1);
    covering(iw, a.kw, a.stride_w, a.pad_w, max ? a.dil_w : 1, a.ow, ow0, ow1);
    // Outputs in increasing index order: the order PoolBackwardPlane adds them in.
    float sum = 0.0f;
    if (max) {
      const std::int32_t* idx = argmax + plane * a.oh * a.ow;
      const std::int32_t self = static_cast<std::int32_t>(ih * a.w + iw);
      for (i64 oh = oh0; oh <= oh1; ++oh)
        for (i64 ow = ow0; ow <= ow1; ++ow)
          if (idx[oh * a.ow + ow] == self) sum += g[oh * a.ow + ow];
    } else {
      const PoolForwardRow win{a, nullptr, nullptr, nullptr};
      for (i64 oh = oh0; oh <= oh1; ++oh)
        for (i64 ow = ow0; ow <= ow1; ++ow) {
          i64 h0, h1, w0, w1;
          const float v = g[oh * a.ow + ow] / win.avg_window(oh, ow, h0, h1, w0, w1);
          if (ih >= h0 && ih < h1 && iw >= w0 && iw < w1) sum += v;
        }
    }
    dx[item] = sum;
  }
};

template <class Exec>
void run(Exec& e, const calls::Pool2dForward& c) {
  if constexpr (has_fine_items_v<Exec>)
    e.for_each("cohort::pool2d_forward", c.a.n * c.a.c * c.a.oh * c.a.ow,
               PoolForwardElem{c.a, c.x, c.y, c.argmax});
  else
    e.for_each("cohort::pool2d_forward", c.a.n * c.a.c * c.a.oh, PoolForwardRow{c.a, c.x, c.y, c.argmax});
}
template <class Exec>
void run(Exec& e, const calls::Pool2dBackward& c) {
  if constexpr (has_fine_items_v<Exec>)
    e.for_each("cohort::pool2d_backward", c.a.n * c.a.c * c.a.h * c.a.w,
               PoolBackwardElem{c.a, c.dy, c.argmax, c.dx});
  else
    e.for_each("cohort::pool2d_backward", c.a.n * c.a.c, PoolBackwardPlane{c.a, c.dy, c.argmax, c.dx});
}

}  // namespace cohort::kernels
