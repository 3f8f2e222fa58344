// Activation family: activation_forward, activation_backward, and the per-channel bias ops that
// fuse an activation into the same pass (bias_add; bias_grad, its gradient; bias_act_backward,
// the activation's backward and the bias gradient together). exp and erf are
// fast_exp / fast_erf (fast_math.hpp): inline and branch-free on the host so the element loops
// vectorise; CUDA's expf / erff on a GPU. The CUDA device sends the linear bias gradient to
// cuBLAS's sgemv (backends/cuda/activation.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/fast_math.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Activations: Act<F>::f (forward) and Act<F>::df (backward from x, y = f(x) and dy), as ATen's
// CPU kernels compute them. uses_x tells the backward functor which saved tensor it reads.

template <Activation F>
struct Act;

template <>
struct Act<Activation::identity> {
  static constexpr bool uses_x = false;
  static COHORT_HD float f(float x, float) { return x; }
  static COHORT_HD float df(float, float, float dy, float) { return dy; }
};
template <>
struct Act<Activation::relu> {  // NaN passes through, as torch.relu
  static constexpr bool uses_x = false;
  static COHORT_HD float f(float x, float) { return x <= 0.0f ? 0.0f : x; }
  static COHORT_HD float df(float, float y, float dy, float) { return y <= 0.0f ? 0.0f : dy; }
};
template <>
struct Act<Activation::leaky_relu> {
  static constexpr bool uses_x = true;
  static COHORT_HD float f(float x, float alpha) { return x > 0.0f ? x : x * alpha; }
  static COHORT_HD float df(float x, float, float dy, float alpha) {
    return x > 0.0f ? dy : dy * alpha;
  }
};
template <>
struct Act<Activation::gelu> {  // exact (erf) form, PyTorch's approximate='none'
  static constexpr bool uses_x = true;
  static COHORT_HD_ALWAYS_INLINE float f(float x, float) {
    return x * 0.5f * (1.0f + fast_erf(x * 0.70710678118654752440f));
  }
  static COHORT_HD_ALWAYS_INLINE float df(float x, float, float dy, float) {
    const float cdf = 0.5f * (1.0f + fast_erf(x * 0.70710678118654752440f));
    const float pdf = fast_exp(-0.5f * x * x) * 0.39894228040143267794f;  // 1 / sqrt(2 pi)
    return dy * (cdf + x * pdf);
  }
};
template <>
struct Act<Activation::sigmoid> {
  static constexpr bool uses_x = false;
  static COHORT_HD_ALWAYS_INLINE float f(float x, float) { return 1.0f / (1.0f + fast_exp(-x)); }
  static COHORT_HD float df(float, float y, float dy, float) { return dy * (1.0f - y) * y; }
};
template <>
struct Act<Activation::tanh> {
  static constexpr bool uses_x = false;
  static COHORT_HD float f(float x, float) { return tanhf(x); }
  static COHORT_HD float df(float, float y, float dy, float) { return dy * (1.0f - y * y); }
};

template <Activation F>
struct ActTag {
  static constexpr Activation value = F;
};

// Calls fn(ActTag<F>{}) for the runtime activation f, so callers instantiate one loop per function
// instead of branching per element.
template <class Fn>
void with_activation(Activation f, Fn&& fn) {
  switch (f) {
    case Activation::identity: return fn(ActTag<Activation::identity>{});
    case Activation::relu: return fn(ActTag<Activation::relu>{});
    case Activation::leaky_relu: return fn(ActTag<Activation::leaky_relu>{});
    case Activation::gelu: return fn(ActTag<Activation::gelu>{});
    case Activation::sigmoid: return fn(ActTag<Activation::sigmoid>{});
    case Activation::tanh: return fn(ActTag<Activation::tanh>{});
  }
}

template <Activation F>
struct ActForward {  // item: element
  float alpha;
  const float* x;
  float* y;
  COHORT_HD_ALWAYS_INLINE void operator()(i64 i) const { y[i] = Act<F>::f(x[i], alpha); }
};

template <Activation F>
struct ActBackward {  // item: element
  float alpha;
  const float* x;
  const float* y;
  const float* dy;
  float* dx;
  COHORT_HD_ALWAYS_INLINE void operator()(i64 i) const {
    const float xv = Act<F>::uses_x ? x[i] : 0.0f;
    const float yv = Act<F>::uses_x ? 0.0f : y[i];
    dx[i] = Act<F>::df(xv, yv, dy[i], alpha);
  }
};

// ---------------------------------------------------------------------------------------------
// Per-channel bias (with an activation fused into the same pass) and its gradient.

template <Activation F>
struct BiasActPlane {  // item: one (outer, channel) plane of `inner` elements
  ChannelDims d;
  const float* bias;  // nullable: activation only
  float* y;
  float alpha;
  i64 cost() const { return d.inner; }
  COHORT_HD void operator()(i64 plane) const {
    const float b = bias ? bias[plane % d.channels] : 0.0f;
    float* p = y + plane * d.inner;
    for (i64 i = 0; i < d.inner; ++i) p[i] = Act<F>::f(p[i] + b, alpha);
  }
};

// inner == 1 (a linear layer's [rows, features] output): one item per row, the bias read
// contiguously along it, instead of one single-element plane per (row, feature).
template <Activation F>
struct BiasActRow {  // item: one row of `channels` elements
  ChannelDims d;
  const float* bias;  // nullable: activation only
  float* y;
  float alpha;
  i64 cost() const { return d.channels; }
  COHORT_HD void operator()(i64 row) const {
    float* p = y + row * d.channels;
    // Two loops rather than a test per element, so that each vectorises (+ 0.0f as before: -0
    // becomes +0).
    if (bias) {
      for (i64 c = 0; c < d.channels; ++c) p[c] = Act<F>::f(p[c] + bias[c], alpha);
    } else {
      for (i64 c = 0; c < d.channels; ++c) p[c] = Act<F>::f(p[c] + 0.0f, alpha);
    }
  }
};

// One element per item, for executors with kFineItems (the GPU): BiasActPlane's and BiasActRow's
// expression for that element (y + b, b = +0 without a bias), so the bits are theirs. A plane or
// row per item would be one GPU thread walking hundreds of elements, neighbouring threads a plane
// apart (GPU review G2).
template <Activation F>
struct BiasActElement {  // item: element; items = outer * channels * inner
  ChannelDims d;
  const float* bias;  // nullable: activation only
  float* y;
  float alpha;
  i64 cost() const { return 1; }
  COHORT_HD_ALWAYS_INLINE void operator()(i64 i) const {
    const float b = bias ? bias[(i / d.inner) % d.channels] : 0.0f;
    y[i] = Act<F>::f(y[i] + b, alpha);
  }
};

struct BiasGradChannel {  // item: channel; dbias[c] += sum over (outer, inner)
  ChannelDims d;
  const float* dy;
  float* dbias;
  i64 cost() const { return d.outer * d.inner; }
  COHORT_HD void operator()(i64 c) const {
    double acc = 0.0;
    for (i64 o = 0; o < d.outer; ++o) acc += sum_of(dy + (o * d.channels + c) * d.inner, d.inner);
    dbias[c] += static_cast<float>(acc);
  }
};

// inner == 1: BiasGradChannel's sums (each channel in double, rows in order: the same
// arithmetic), but one item per block of `block` neighbouring channels, so every row is read a
// cache line at a time instead of one strided element per channel item. Items = ceil(C / block).
struct BiasGradColumns {
  static constexpr i64 block = 16;
  ChannelDims d;
  const float* dy;
  float* dbias;
  i64 cost() const { return d.outer * block; }
  COHORT_HD void operator()(i64 item) const {
    const i64 c0 = item * block;
    const i64 n = d.channels - c0 < block ? d.channels - c0 : block;
    double acc[block] = {};
    if (n == block) {  // a constant trip count: the compiler keeps acc in vector registers
      for (i64 o = 0; o < d.outer; ++o) {
        const float* row = dy + o * d.channels + c0;
        for (i64 k = 0; k < block; ++k) acc[k] += row[k];
      }
    } else {
      for (i64 o = 0; o < d.outer; ++o) {
        const float* row = dy + o * d.channels + c0;
        for (i64 k = 0; k < n; ++k) acc[k] += row[k];
      }
    }
    for (i64 k = 0; k < n; ++k) dbias[c0 + k] += static_cast<float>(acc[k]);
  }
};

// BiasActBackward: ActBackward's element, then BiasGrad's sums over the values just written, in
// BiasGrad's order (so dx and dbias have the bits of activation_backward then bias_grad).
template <Activation F>
COHORT_HD_ALWAYS_INLINE float act_grad_at(const calls::BiasActBackward& c, i64 i) {
  const float xv = Act<F>::uses_x ? c.x[i] : 0.0f;
  const float yv = Act<F>::uses_x ? 0.0f : c.y[i];
  return Act<F>::df(xv, yv, c.dy[i], c.alpha);
}

template <Activation F>
struct BiasActGradColumns {  // inner == 1; item: BiasGradColumns's block of channels
  static constexpr i64 block = BiasGradColumns::block;
  calls::BiasActBackward c;
  i64 cost() const { return c.d.outer * block; }
  COHORT_HD void operator()(i64 item) const {
    const i64 c0 = item * block;
    const i64 n = c.d.channels - c0 < block ? c.d.channels - c0 : block;
    double acc[block] = {};
    for (i64 o = 0; o < c.d.outer; ++o) {
      const i64 row = o * c.d.channels + c0;
      for (i64 k = 0; k < n; ++k) {
        const float g = act_grad_at<F>(c, row + k);
        c.dx[row + k] = g;
        acc[k] += g;
      }
    }
    for (i64 k = 0; k < n; ++k) c.dbias[c0 + k] += static_cast<float>(acc[k]);
  }
};

template <Activation F>
struct BiasActGradChannel {  // item: channel, as BiasGradChannel
  calls::BiasActBackward c;
  i64 cost() const { return c.d.outer * c.d.inner; }
  COHORT_HD void operator()(i64 ch) const {
    double acc = 0.0;
    for (i64 o = 0; o < c.d.outer; ++o) {
      const i64 plane = (o * c.d.channels + ch) * c.d.inner;
      for (i64 i = 0; i < c.d.inner; ++i) c.dx[plane + i] = act_grad_at<F>(c, plane + i);
      acc += sum_of(c.dx + plane, c.d.inner);
    }
    c.dbias[ch] += static_cast<float>(acc);
  }
};

template <class Exec>
void run(Exec& e, const calls::ActivationForward& c) {
  with_activation(c.f, [&](auto tag) {
    e.for_each("cohort::activation_forward", static_cast<i64>(c.n),
               ActForward<decltype(tag)::value>{c.alpha, c.x, c.y});
  });
}
template <class Exec>
void run(Exec& e, const calls::ActivationBackward& c) {
  with_activation(c.f, [&](auto tag) {
    e.for_each("cohort::activation_backward", static_cast<i64>(c.n),
               ActBackward<decltype(tag)::value>{c.alpha, c.x, c.y, c.dy, c.dx});
  });
}
template <class Exec>
void run(Exec& e, const calls::BiasAdd& c) {
  with_activation(c.f, [&](auto tag) {
    if constexpr (has_fine_items_v<Exec>)
      e.for_each("cohort::bias_add", c.d.outer * c.d.channels * c.d.inner,
                 BiasActElement<decltype(tag)::value>{c.d, c.bias, c.y, c.alpha});
    else if (c.d.inner == 1)
      e.for_each("cohort::bias_add", c.d.outer,
                 BiasActRow<decltype(tag)::value>{c.d, c.bias, c.y, c.alpha});
    else
      e.for_each("cohort::bias_add", c.d.outer * c.d.channels,
                 BiasActPlane<decltype(tag)::value>{c.d, c.bias, c.y, c.alpha});
  });
}
template <class Exec>
void run(Exec& e, const calls::BiasGrad& c) {
  if (c.d.inner == 1)
    e.for_each("cohort::bias_grad",
               (c.d.channels + BiasGradColumns::block - 1) / BiasGradColumns::block,
               BiasGradColumns{c.d, c.dy, c.dbias});
  else
    e.for_each("cohort::bias_grad", c.d.channels, BiasGradChannel{c.d, c.dy, c.dbias});
}

template <class Exec>
void run(Exec& e, const calls::BiasActBackward& c) {
  with_activation(c.f, [&](auto tag) {
    constexpr Activation F = decltype(tag)::value;
    if (c.d.inner == 1)
      e.for_each("cohort::bias_act_backward",
                 (c.d.channels + BiasGradColumns::block - 1) / BiasGradColumns::block,
                 BiasActGradColumns<F>{c});
    else
      e.for_each("cohort::bias_act_backward", c.d.channels, BiasActGradChannel<F>{c});
  });
}

}  // namespace cohort::kernels
