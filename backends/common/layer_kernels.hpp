// The layer ops' arithmetic and index math, written once. Every functor here is one "work item"
// function `operator()(i64 item)`: the host backend runs items 0..count-1 in Kokkos parallel_fors
// over contiguous ranges split between its threads, the CUDA backend runs them one per GPU thread
// (backends/common/op_impl.hpp says which functor runs over how many items). CPU-only CI therefore
// tests the very code a GPU runs.
//
// Why items are rows or planes rather than single elements: on a CPU core, a work item that loops
// over a contiguous row (an im2col row, one pooling output row, one channel's statistics) is what
// makes the loop vectorise and avoids recomputing divisions per element. On a GPU such items are
// coarser than ideal but still parallel (thousands of rows or planes per launch); the CUDA backend
// trades that peak speed for sharing the math (DESIGN.md: "kernels written once"). Items never
// write to memory another item writes, so no atomics, and the results are deterministic, equal on
// both backends and independent of the host's thread count.
//
// `i64 cost() const` (host only): about how many elements one item touches, for functors whose
// item is more than one element. The host splits a launch between threads only when count * cost
// is worth a thread's wake-up (host_ops.cpp); functors without it count 1 per item.
//
// Reductions (batch-norm and layer-norm statistics, softmax denominators, bias gradients)
// accumulate in double, over float partial sums of at most 32 elements (sum_of below).
//
// exp and erf in GELU, sigmoid and softmax are fast_exp / fast_erf (fast_math.hpp): inline and
// branch-free on the host, so the element loops vectorise; CUDA's expf / erff on a GPU. The
// functions between an element loop and them are COHORT_HD_ALWAYS_INLINE, for the same reason.
//
// Rules as in kernels.hpp: no allocation, no exceptions, only <cmath> functions nvcc provides.
#pragma once

#include <cmath>
#include <cstdint>

#include "cohort/backend/layer_args.hpp"
#include "common/fast_math.hpp"
#include "common/kernels.hpp"

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
void dispatch_activation(Activation f, Fn&& fn) {
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
// Row sums: blocks of 32 elements summed in float, the block sums accumulated in double. On the
// host the block loop is an OpenMP SIMD reduction (the host backend builds with -fopenmp-simd and
// defines COHORT_HOST_SIMD; compilers will not reorder a float sum on their own), so a block is a
// few vector adds instead of a serial chain of add latencies. The GPU sums each block in order.
// Error: ~32 float roundings per block, far below what the tests demand.

#if defined(COHORT_HOST_SIMD) && !defined(__CUDACC__)
#define COHORT_PRAGMA(x) _Pragma(#x)
#define COHORT_SIMD_SUM(...) COHORT_PRAGMA(omp simd reduction(+ : __VA_ARGS__))
#else
#define COHORT_SIMD_SUM(...)
#endif

constexpr int kSumBlock = 32;

COHORT_HD double sum_of(const float* p, i64 n) {
  double total = 0.0;
  i64 i = 0;
  for (; i + kSumBlock <= n; i += kSumBlock) {
    float s = 0.0f;
    COHORT_SIMD_SUM(s)
    for (int k = 0; k < kSumBlock; ++k) s += p[i + k];
    total += s;
  }
  for (; i < n; ++i) total += p[i];
  return total;
}

// Sum of (p[i] - mean)^2.
COHORT_HD double sum_sq_dev(const float* p, i64 n, double mean) {
  const float m = static_cast<float>(mean);
  double total = 0.0;
  i64 i = 0;
  for (; i + kSumBlock <= n; i += kSumBlock) {
    float s = 0.0f;
    COHORT_SIMD_SUM(s)
    for (int k = 0; k < kSumBlock; ++k) {
      const float d = p[i + k] - m;
      s += d * d;
    }
    total += s;
  }
  for (; i < n; ++i) {
    const double d = p[i] - mean;
    total += d * d;
  }
  return total;
}

// Adds the sums of g[i] and of g[i] * (x[i] - mu) * is to sg and sgx (batch-norm backward's two
// reductions, one pass).
COHORT_HD void sum_g_gxhat(const float* g, const float* x, i64 n, float mu, float is, double& sg,
                           double& sgx) {
  i64 i = 0;
  for (; i + kSumBlock <= n; i += kSumBlock) {
    float a = 0.0f, b = 0.0f;
    COHORT_SIMD_SUM(a, b)
    for (int k = 0; k < kSumBlock; ++k) {
      a += g[i + k];
      b += g[i + k] * ((x[i + k] - mu) * is);
    }
    sg += a;
    sgx += b;
  }
  for (; i < n; ++i) {
    sg += g[i];
    sgx += static_cast<double>(g[i]) * ((x[i] - mu) * is);
  }
}

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

// ---------------------------------------------------------------------------------------------
// Convolution as GEMM. For one image, col is the [c*r*s, oh*ow] matrix whose row (ci, p, q) holds
// the input pixels that kernel tap (p, q) of channel ci meets at every output position, 0 where
// the tap falls in the padding. Then y_g = W_g col_g per group (one GEMM), dW_g += dy_g col_g^T,
// and col_g = W_g^T dy_g followed by col2im gives dx.

// The output columns j in [lo, hi) whose tap lands inside [0, extent): 0 <= j*stride + off < extent.
COHORT_HD void valid_range(i64 off, i64 stride, i64 extent, i64 outs, i64& lo, i64& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = extent - 1 - off < 0 ? 0 : (extent - 1 - off) / stride + 1;
  if (hi > outs) hi = outs;
  if (lo > hi) lo = hi;
}

struct Im2colRow {  // item: one row (ci, p, q) of col, all oh * ow outputs: items = c * r * s
  Conv2dArgs a;
  const float* x;  // one image [c, h, w]
  float* col;      // [c * r * s, oh * ow]
  i64 cost() const { return a.oh * a.ow; }
  COHORT_HD void operator()(i64 row) const {
    const i64 q = row % a.s;
    const i64 p = (row / a.s) % a.r;
    const i64 ci = row / (a.s * a.r);
    const float* img = x + ci * a.h * a.w;
    const i64 off = q * a.dil_w - a.pad_w;  // input column of output column j: j * stride_w + off
    i64 lo, hi;
    valid_range(off, a.stride_w, a.w, a.ow, lo, hi);
    float* out = col + row * (a.oh * a.ow);
    for (i64 oh = 0; oh < a.oh; ++oh, out += a.ow) {
      const i64 ih = oh * a.stride_h - a.pad_h + p * a.dil_h;
      if (ih < 0 || ih >= a.h) {
        for (i64 j = 0; j < a.ow; ++j) out[j] = 0.0f;
        continue;
      }
      const float* in = img + ih * a.w;
      for (i64 j = 0; j < lo; ++j) out[j] = 0.0f;
      if (a.stride_w == 1) {
        for (i64 j = lo; j < hi; ++j) out[j] = in[j + off];
      } else {
        for (i64 j = lo; j < hi; ++j) out[j] = in[j * a.stride_w + off];
      }
      for (i64 j = hi; j < a.ow; ++j) out[j] = 0.0f;
    }
  }
};

struct Col2imRow {  // item: one input row (ci, ih) of dx, summed over every tap that read it
  Conv2dArgs a;
  const float* col;  // [c * r * s, oh * ow]
  float* dx;         // one image [c, h, w]
  i64 cost() const { return a.r * a.s * a.w; }
  COHORT_HD void operator()(i64 item) const {
    const i64 ih = item % a.h;
    const i64 ci = item / a.h;
    float* out = dx + (ci * a.h + ih) * a.w;
    for (i64 j = 0; j < a.w; ++j) out[j] = 0.0f;
    for (i64 p = 0; p < a.r; ++p) {
      const i64 t = ih + a.pad_h - p * a.dil_h;  // = oh * stride_h for the output row that used it
      if (t < 0 || t % a.stride_h != 0) continue;
      const i64 oh = t / a.stride_h;
      if (oh >= a.oh) continue;
      for (i64 q = 0; q < a.s; ++q) {
        const float* src = col + ((ci * a.r + p) * a.s + q) * (a.oh * a.ow) + oh * a.ow;
        const i64 off = q * a.dil_w - a.pad_w;
        i64 lo, hi;
        valid_range(off, a.stride_w, a.w, a.ow, lo, hi);
        if (a.stride_w == 1) {
          for (i64 j = lo; j < hi; ++j) out[j + off] += src[j];
        } else {
          for (i64 j = lo; j < hi; ++j) out[j * a.stride_w + off] += src[j];
        }
      }
    }
  }
};

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

struct SoftmaxForward {  // item: one (outer, inner) position, reduced along channels
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

struct SoftmaxBackward {  // item: one (outer, inner) position
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
// them) but can from a GPU's, where they are not read back (core/src/layer_ops.cpp): such a row
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

struct CrossEntropyBackwardRow {  // item: row; dx = scale * (softmax - onehot)
  const float* logp;
  const std::int64_t* target;
  i64 classes;
  float scale;
  float* dx;
  i64 cost() const { return 2 * classes; }
  COHORT_HD void operator()(i64 r) const {
    const float* in = logp + r * classes;
    float* out = dx + r * classes;
    const i64 t = target[r];
    const bool valid = t >= 0 && t < classes;
    for (i64 c = 0; c < classes; ++c)
      out[c] = valid ? scale * (expf(in[c]) - (c == t ? 1.0f : 0.0f)) : NAN;
  }
};

// ---------------------------------------------------------------------------------------------
// Batch normalisation: statistics per channel, then the affine map per (image, channel) plane.

struct BatchNormStats {  // item: channel
  BatchNormArgs a;
  const float* x;
  float* running_mean;  // nullable
  float* running_var;   // nullable
  float* save_mean;
  float* save_invstd;
  i64 cost() const { return 2 * a.n * a.inner; }
  COHORT_HD void operator()(i64 c) const {
    if (!a.training) {
      save_mean[c] = running_mean[c];
      save_invstd[c] = static_cast<float>(1.0 / ::sqrt(static_cast<double>(running_var[c]) + a.eps));
      return;
    }
    const double m = static_cast<double>(a.n * a.inner);
    double sum = 0.0;
    for (i64 b = 0; b < a.n; ++b) sum += sum_of(x + (b * a.c + c) * a.inner, a.inner);
    const double mean = sum / m;
    double sq = 0.0;  // two passes: no cancellation for data far from zero
    for (i64 b = 0; b < a.n; ++b) sq += sum_sq_dev(x + (b * a.c + c) * a.inner, a.inner, mean);
    const double var = sq / m;
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(1.0 / ::sqrt(var + a.eps));
    if (running_mean) {
      running_mean[c] = static_cast<float>((1.0 - a.momentum) * running_mean[c] + a.momentum * mean);
      running_var[c] = static_cast<float>((1.0 - a.momentum) * running_var[c] +
                                          a.momentum * var * m / (m - 1.0));
    }
  }
};

struct BatchNormApply {  // item: (image, channel) plane
  BatchNormArgs a;
  const float* x;
  const float* gamma;  // nullable
  const float* beta;   // nullable
  const float* mean;
  const float* invstd;
  float* y;
  i64 cost() const { return a.inner; }
  COHORT_HD void operator()(i64 plane) const {
    const i64 c = plane % a.c;
    const float scale = invstd[c] * (gamma ? gamma[c] : 1.0f);
    const float shift = (beta ? beta[c] : 0.0f) - mean[c] * scale;
    const float* in = x + plane * a.inner;
    float* out = y + plane * a.inner;
    for (i64 i = 0; i < a.inner; ++i) out[i] = in[i] * scale + shift;
  }
};

struct BatchNormBackward {  // item: channel
  BatchNormArgs a;
  const float* x;
  const float* dy;
  const float* gamma;  // nullable
  const float* mean;
  const float* invstd;
  float* dx;      // nullable
  float* dgamma;  // nullable
  float* dbeta;   // nullable
  i64 cost() const { return 3 * a.n * a.inner; }
  COHORT_HD void operator()(i64 c) const {
    const float mu = mean[c], is = invstd[c];
    double sdy = 0.0, sdyx = 0.0;  // sum dy, sum dy * xhat
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c) * a.inner;
      sum_g_gxhat(dy + off, x + off, a.inner, mu, is, sdy, sdyx);
    }
    if (dgamma) dgamma[c] += static_cast<float>(sdyx);
    if (dbeta) dbeta[c] += static_cast<float>(sdy);
    if (!dx) return;
    const float g = (gamma ? gamma[c] : 1.0f) * is;
    const double m = static_cast<double>(a.n * a.inner);
    // Training: the batch statistics depend on x too (the two mean terms); eval: a fixed affine map.
    const float k1 = a.training ? static_cast<float>(sdy / m) : 0.0f;
    const float k2 = a.training ? static_cast<float>(sdyx / m) : 0.0f;
    for (i64 b = 0; b < a.n; ++b) {
      const i64 off = (b * a.c + c) * a.inner;
      for (i64 i = 0; i < a.inner; ++i)
        dx[off + i] = g * (dy[off + i] - k1 - (x[off + i] - mu) * is * k2);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Layer normalisation over the last `cols` elements of each row.

struct LayerNormForwardRow {  // item: row
  LayerNormArgs a;
  const float* x;
  const float* gamma;  // nullable
  const float* beta;   // nullable
  float* y;
  float* save_mean;
  float* save_rstd;
  i64 cost() const { return 3 * a.cols; }
  COHORT_HD void operator()(i64 r) const {
    const float* in = x + r * a.cols;
    float* out = y + r * a.cols;
    const double mean = sum_of(in, a.cols) / static_cast<double>(a.cols);
    const double sq = sum_sq_dev(in, a.cols, mean);
    const float mu = static_cast<float>(mean);
    const float rs = static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(a.cols) + a.eps));
    save_mean[r] = mu;
    save_rstd[r] = rs;
    for (i64 j = 0; j < a.cols; ++j)
      out[j] = (in[j] - mu) * rs * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
  }
};

struct LayerNormBackwardRow {  // item: row; dx only
  LayerNormArgs a;
  const float* x;
  const float* dy;
  const float* gamma;  // nullable
  const float* mean;
  const float* rstd;
  float* dx;
  i64 cost() const { return 3 * a.cols; }
  COHORT_HD void operator()(i64 r) const {
    const float* in = x + r * a.cols;
    const float* g = dy + r * a.cols;
    float* out = dx + r * a.cols;
    const float mu = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;  // sum of (dy * gamma) and of (dy * gamma * xhat)
    for (i64 j = 0; j < a.cols; ++j) {
      const float gj = g[j] * (gamma ? gamma[j] : 1.0f);
      sg += gj;
      sgx += static_cast<double>(gj) * ((in[j] - mu) * rs);
    }
    const float k1 = static_cast<float>(sg / static_cast<double>(a.cols));
    const float k2 = static_cast<float>(sgx / static_cast<double>(a.cols));
    for (i64 j = 0; j < a.cols; ++j) {
      const float gj = g[j] * (gamma ? gamma[j] : 1.0f);
      out[j] = rs * (gj - k1 - (in[j] - mu) * rs * k2);
    }
  }
};

// item: a block of `block` neighbouring columns (each summed in double over the rows in order),
// so each row is read a cache line at a time rather than one strided element per column item;
// items = ceil(cols / block). dgamma[j] += sum dy * xhat, dbeta[j] += sum dy.
struct LayerNormParamGradCols {
  static constexpr i64 block = 16;
  LayerNormArgs a;
  const float* x;
  const float* dy;
  const float* mean;
  const float* rstd;
  float* dgamma;  // nullable
  float* dbeta;   // nullable
  i64 cost() const { return a.rows * block; }
  COHORT_HD void operator()(i64 item) const {
    const i64 j0 = item * block;
    const i64 n = a.cols - j0 < block ? a.cols - j0 : block;
    double sg[block] = {}, sb[block] = {};
    if (n == block)  // a constant trip count: the compiler keeps the sums in vector registers
      sum_rows<block>(j0, sg, sb);
    else
      sum_rows<0>(j0, sg, sb, n);
    for (i64 k = 0; k < n; ++k) {
      if (dgamma) dgamma[j0 + k] += static_cast<float>(sg[k]);
      if (dbeta) dbeta[j0 + k] += static_cast<float>(sb[k]);
    }
  }
  // Columns [j0, j0 + (N ? N : n)) summed over every row, in row order.
  template <i64 N>
  COHORT_HD void sum_rows(i64 j0, double* sg, double* sb, i64 n = N) const {
    for (i64 r = 0; r < a.rows; ++r) {
      const float* g = dy + r * a.cols + j0;
      const float* xr = x + r * a.cols + j0;
      const float mu = mean[r], rs = rstd[r];
      for (i64 k = 0; k < (N ? N : n); ++k) {
        sb[k] += g[k];
        sg[k] += static_cast<double>(g[k]) * ((xr[k] - mu) * rs);
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Dropout. Element i of a step draws Philox4x32-10 lane i % 4 of counter block i / 4, with the
// counter (block, step) and the key seed, so each training step draws an independent mask and
// forward and backward draw the same one. An item is kBlocks consecutive blocks, computed
// round by round across the blocks: Philox is a serial chain of ten multiply rounds, and
// interleaving independent blocks is what lets the CPU overlap them (and the compiler vectorise
// the 32x32->64-bit multiplies); one block per item runs at the chain's latency.

struct DropoutBlocks {
  static constexpr int kBlocks = 8;  // 32 elements per item
  static constexpr i64 items(i64 n) { return (n + kBlocks * 4 - 1) / (kBlocks * 4); }
  DropoutArgs a;
  i64 n;
  const float* in;  // x (forward) or dy (backward)
  float* out;
  i64 cost() const { return 8 * kBlocks * 4; }
  COHORT_HD void operator()(i64 item) const {
    std::uint32_t c0[kBlocks], c1[kBlocks], c2[kBlocks], c3[kBlocks];
    for (int j = 0; j < kBlocks; ++j) {
      const std::uint64_t b = static_cast<std::uint64_t>(item) * kBlocks + j;
      c0[j] = static_cast<std::uint32_t>(b);
      c1[j] = static_cast<std::uint32_t>(b >> 32);
      c2[j] = static_cast<std::uint32_t>(a.step);
      c3[j] = static_cast<std::uint32_t>(a.step >> 32);
    }
    std::uint32_t k0 = static_cast<std::uint32_t>(a.seed), k1 = static_cast<std::uint32_t>(a.seed >> 32);
    for (int round = 0; round < 10; ++round) {  // philox4x32_10 of kernels.hpp, blocks side by side
      for (int j = 0; j < kBlocks; ++j) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * c0[j];
        const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * c2[j];
        const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
        const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
        c1[j] = static_cast<std::uint32_t>(p1);
        c3[j] = static_cast<std::uint32_t>(p0);
        c0[j] = n0;
        c2[j] = n2;
      }
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    // ATen multiplies by a mask of 0 or 1 / (1 - p) computed in float.
    const float keep_scale = a.p < 1.0f ? 1.0f / (1.0f - a.p) : 0.0f;
    const i64 first = item * kBlocks * 4;
    for (int j = 0; j < kBlocks; ++j) {
      const std::uint32_t r[4] = {c0[j], c1[j], c2[j], c3[j]};
      for (int lane = 0; lane < 4; ++lane) {
        const i64 i = first + j * 4 + lane;
        if (i < n) out[i] = in[i] * (u32_to_unit(r[lane]) >= a.p ? keep_scale : 0.0f);
      }
    }
  }
};

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

}  // namespace cohort::kernels
