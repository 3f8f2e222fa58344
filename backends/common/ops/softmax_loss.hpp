// Softmax and loss family: softmax_forward / softmax_backward (log or not, over any axis as
// [outer, channels, inner]), nll_forward, nll_backward, cross_entropy_backward. The CUDA device
// sends softmax to cuDNN where it covers the case (backends/cuda/softmax_loss.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/fast_math.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Softmax and the class-index losses.

// out[c * so] = exp(in[c * si] - m) for c < n. With unit strides (softmax over the last axis)
// the host vectorises the loop; its sum is taken afterwards, in order, by the caller, so results
// are those of one fused loop bit for bit.
COHORT_HD void exp_shifted(const float* in, i64 si, float* out, i64 so, i64 n, float m) {
  if (si == 1 && so == 1) {
    for (i64 c = 0; c < n; ++c) out[c] = fast_exp(in[c] - m);
  } else {
    for (i64 c = 0; c < n; ++c) out[c * so] = fast_exp(in[c * si] - m);
  }
}

struct SoftmaxForwardItem {  // item: one (outer, inner) position, reduced along channels
  ChannelDims d;
  bool log;
  const float* x;
  float* y;
  i64 cost() const { return 3 * d.channels; }
  COHORT_HD void operator()(i64 item) const {
    const i64 base = (item / d.inner) * d.channels * d.inner + item % d.inner;
    const i64 st = d.inner;
    const float* in = x + base;
    float* out = y + base;
    float m = -INFINITY;
    for (i64 c = 0; c < d.channels; ++c) {
      const float v = in[c * st];
      if (v > m || v != v) m = v;
    }
    double sum = 0.0;
    if (log) {  // out may alias in and is read to the end: the exponentials go through a buffer
      constexpr i64 kChunk = 32;
      float e[kChunk];
      for (i64 c0 = 0; c0 < d.channels; c0 += kChunk) {
        const i64 n = d.channels - c0 < kChunk ? d.channels - c0 : kChunk;
        exp_shifted(in + c0 * st, st, e, 1, n, m);
        for (i64 k = 0; k < n; ++k) sum += e[k];
      }
      const float lse = m + static_cast<float>(::log(sum));
      for (i64 c = 0; c < d.channels; ++c) out[c * st] = in[c * st] - lse;
    } else {  // each exponential once, kept in out until the sum is known (in may alias out)
      exp_shifted(in, st, out, st, d.channels, m);
      for (i64 c = 0; c < d.channels; ++c) sum += out[c * st];
      const float inv = static_cast<float>(1.0 / sum);
      for (i64 c = 0; c < d.channels; ++c) out[c * st] *= inv;
    }
  }
};

struct SoftmaxBackwardItem {  // item: one (outer, inner) position
  ChannelDims d;
  bool log;
  const float* y;
  const float* dy;
  float* dx;
  i64 cost() const { return 3 * d.channels; }
  COHORT_HD void operator()(i64 item) const {
    const i64 base = (item / d.inner) * d.channels * d.inner + item % d.inner;
    const i64 st = d.inner;
    double s = 0.0;
    if (log) {  // dx = dy - softmax * sum(dy)
      for (i64 c = 0; c < d.channels; ++c) s += dy[base + c * st];
      const float sf = static_cast<float>(s);
      for (i64 c = 0; c < d.channels; ++c)
        dx[base + c * st] = dy[base + c * st] - fast_exp(y[base + c * st]) * sf;
    } else {  // dx = y * (dy - sum(dy * y))
      for (i64 c = 0; c < d.channels; ++c)
        s += static_cast<double>(dy[base + c * st]) * y[base + c * st];
      const float sf = static_cast<float>(s);
      for (i64 c = 0; c < d.channels; ++c)
        dx[base + c * st] = y[base + c * st] * (dy[base + c * st] - sf);
    }
  }
};

// Targets out of [0, classes) cannot reach these kernels from host memory (the front end checks
// them) but can from a GPU's, where they are not read back (core/src/ops/softmax_loss.cpp): such a row
// gets a NaN loss or gradient, never a read or write outside the row.
struct NllForwardRow {  // item: row
  const float* logp;
  const std::int64_t* target;
  i64 classes;
  float* loss;
  COHORT_HD void operator()(i64 r) const {
    const i64 t = target[r];
    loss[r] = t >= 0 && t < classes ? -logp[r * classes + t] : NAN;
  }
};

struct NllBackwardRow {  // item: row
  const std::int64_t* target;
  i64 classes;
  float scale;
  float* dx;
  i64 cost() const { return classes; }
  COHORT_HD void operator()(i64 r) const {
    float* out = dx + r * classes;
    const i64 t = target[r];
    const bool valid = t >= 0 && t < classes;
    for (i64 c = 0; c < classes; ++c) out[c] = valid ? 0.0f : NAN;
    if (valid) out[t] = -scale;
  }
};

// item: row; dx = scale * (softmax - on * onehot - off), on = 1 - smoothing, off = smoothing / C
// (with smoothing 0 the subtractions of 1 and 0 leave the plain gradient's bits)
struct CrossEntropyBackwardRow {
  const float* logp;
  const std::int64_t* target;
  i64 classes;
  float scale, on, off;
  float* dx;
  i64 cost() const { return 2 * classes; }
  COHORT_HD void operator()(i64 r) const {
    const float* in = logp + r * classes;
    float* out = dx + r * classes;
    const i64 t = target[r];
    const bool valid = t >= 0 && t < classes;
    for (i64 c = 0; c < classes; ++c)
      out[c] = valid ? scale * (expf(in[c]) - (c == t ? on : 0.0f) - off) : NAN;
  }
};

template <class Exec>
void run(Exec& e, const calls::SoftmaxForward& c) {
  e.for_each("cohort::softmax_forward", c.d.outer * c.d.inner, SoftmaxForwardItem{c.d, c.log, c.x, c.y});
}
template <class Exec>
void run(Exec& e, const calls::SoftmaxBackward& c) {
  e.for_each("cohort::softmax_backward", c.d.outer * c.d.inner,
             SoftmaxBackwardItem{c.d, c.log, c.y, c.dy, c.dx});
}
template <class Exec>
void run(Exec& e, const calls::NllForward& c) {
  e.for_each("cohort::nll_forward", static_cast<i64>(c.rows),
             NllForwardRow{c.logp, c.target, static_cast<i64>(c.classes), c.loss});
}
template <class Exec>
void run(Exec& e, const calls::NllBackward& c) {
  e.for_each("cohort::nll_backward", static_cast<i64>(c.rows),
             NllBackwardRow{c.target, static_cast<i64>(c.classes), c.scale, c.dx});
}
template <class Exec>
void run(Exec& e, const calls::CrossEntropyBackward& c) {
  e.for_each("cohort::cross_entropy_backward", static_cast<i64>(c.rows),
             CrossEntropyBackwardRow{c.logp, c.target, static_cast<i64>(c.classes), c.scale,
                                     1.0f - c.smoothing,
                                     c.smoothing / static_cast<float>(c.classes), c.dx});
}

}  // namespace cohort::kernels
