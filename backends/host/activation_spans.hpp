// The host's activation_forward / activation_backward over a contiguous span of elements,
// bias_add's plane and row items (also the convolutions' bias + activation pass), and
// bias_act_backward's column blocks: the shared
// families' per-element functions (common/ops/activation.hpp, Act<F>::f and ::df), one loop per
// activation. Internal header, included by activation.cpp with COHORT_ACTIVATION_SPANS
// defined as GCC's target_clones attribute (AVX-512, AVX2 and the baseline, as attention_rows.hpp,
// which says why the bits are the same on every CPU), and by tests/backends/host/isa_builds.cpp
// without it, once per instruction set, to check that.
//
// Why: the shared element loops are built for baseline x86-64 (SSE, 4 floats per instruction);
// GELU's forward and backward (erf and exp in straight-line float code) were 9% of a ViT step
// that way.
#pragma once

#include <cstdint>

#include "common/ops/activation.hpp"

#ifndef COHORT_ACTIVATION_SPANS
#define COHORT_ACTIVATION_SPANS
#endif

namespace cohort::host {
namespace {

template <Activation F>
COHORT_FAST_MATH_INLINE void forward_span(float alpha, const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = kernels::Act<F>::f(x[i], alpha);
}

template <Activation F>
COHORT_FAST_MATH_INLINE void backward_span(float alpha, const float* x, const float* y,
                                           const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    dx[i] = kernels::Act<F>::df(kernels::Act<F>::uses_x ? x[i] : 0.0f,
                                kernels::Act<F>::uses_x ? 0.0f : y[i], dy[i], alpha);
}

// y[i] = f(x[i]) for i < n (x may be y).
COHORT_ACTIVATION_SPANS void activation_forward_span(Activation f, float alpha, const float* x,
                                                     float* y, std::int64_t n) {
  switch (f) {
    case Activation::identity:
      return forward_span<Activation::identity>(alpha, x, y, n);
    case Activation::relu:
      return forward_span<Activation::relu>(alpha, x, y, n);
    case Activation::leaky_relu:
      return forward_span<Activation::leaky_relu>(alpha, x, y, n);
    case Activation::gelu:
      return forward_span<Activation::gelu>(alpha, x, y, n);
    case Activation::sigmoid:
      return forward_span<Activation::sigmoid>(alpha, x, y, n);
    case Activation::tanh:
      return forward_span<Activation::tanh>(alpha, x, y, n);
  }
}

// dx[i] = f'(...) dy[i] from x or y, as the activation's backward reads (dx may be dy).
COHORT_ACTIVATION_SPANS void activation_backward_span(Activation f, float alpha, const float* x,
                                                      const float* y, const float* dy, float* dx,
                                                      std::int64_t n) {
  switch (f) {
    case Activation::identity:
      return backward_span<Activation::identity>(alpha, x, y, dy, dx, n);
    case Activation::relu:
      return backward_span<Activation::relu>(alpha, x, y, dy, dx, n);
    case Activation::leaky_relu:
      return backward_span<Activation::leaky_relu>(alpha, x, y, dy, dx, n);
    case Activation::gelu:
      return backward_span<Activation::gelu>(alpha, x, y, dy, dx, n);
    case Activation::sigmoid:
      return backward_span<Activation::sigmoid>(alpha, x, y, dy, dx, n);
    case Activation::tanh:
      return backward_span<Activation::tanh>(alpha, x, y, dy, dx, n);
  }
}

template <Activation F>
COHORT_FAST_MATH_INLINE void bias_plane(float alpha, float b, float* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = kernels::Act<F>::f(p[i] + b, alpha);
}

template <Activation F>
COHORT_FAST_MATH_INLINE void bias_row(float alpha, const float* bias, float* p, std::int64_t n) {
  if (bias) {  // as kernels::BiasActRow: two loops, + 0.0f without a bias (-0 becomes +0)
    for (std::int64_t c = 0; c < n; ++c) p[c] = kernels::Act<F>::f(p[c] + bias[c], alpha);
  } else {
    for (std::int64_t c = 0; c < n; ++c) p[c] = kernels::Act<F>::f(p[c] + 0.0f, alpha);
  }
}

// p[i] = f(p[i] + b) for i < n: one (outer, channel) plane of a per-channel bias add
// (kernels::BiasActPlane's item; b = 0 without a bias).
COHORT_ACTIVATION_SPANS void bias_act_plane_span(Activation f, float alpha, float b, float* p,
                                                 std::int64_t n) {
  switch (f) {
    case Activation::identity:
      return bias_plane<Activation::identity>(alpha, b, p, n);
    case Activation::relu:
      return bias_plane<Activation::relu>(alpha, b, p, n);
    case Activation::leaky_relu:
      return bias_plane<Activation::leaky_relu>(alpha, b, p, n);
    case Activation::gelu:
      return bias_plane<Activation::gelu>(alpha, b, p, n);
    case Activation::sigmoid:
      return bias_plane<Activation::sigmoid>(alpha, b, p, n);
    case Activation::tanh:
      return bias_plane<Activation::tanh>(alpha, b, p, n);
  }
}

// p[c] = f(p[c] + bias[c]) for c < n: one row of a linear layer's output (kernels::BiasActRow's
// item; bias may be null).
COHORT_ACTIVATION_SPANS void bias_act_row_span(Activation f, float alpha, const float* bias,
                                               float* p, std::int64_t n) {
  switch (f) {
    case Activation::identity:
      return bias_row<Activation::identity>(alpha, bias, p, n);
    case Activation::relu:
      return bias_row<Activation::relu>(alpha, bias, p, n);
    case Activation::leaky_relu:
      return bias_row<Activation::leaky_relu>(alpha, bias, p, n);
    case Activation::gelu:
      return bias_row<Activation::gelu>(alpha, bias, p, n);
    case Activation::sigmoid:
      return bias_row<Activation::sigmoid>(alpha, bias, p, n);
    case Activation::tanh:
      return bias_row<Activation::tanh>(alpha, bias, p, n);
  }
}

template <Activation F>
COHORT_FAST_MATH_INLINE void grad_columns(float alpha, const float* x, const float* y,
                                          const float* dy, float* dx, std::int64_t rows,
                                          std::int64_t stride, std::int64_t n, double* acc) {
  for (std::int64_t o = 0; o < rows; ++o) {
    const std::int64_t at = o * stride;
    backward_span<F>(alpha, x ? x + at : nullptr, y ? y + at : nullptr, dy + at, dx + at, n);
    for (std::int64_t k = 0; k < n; ++k) acc[k] += dx[at + k];
  }
}

// bias_act_backward over n neighbouring columns (n <= kGradColumns) of a [rows, stride] layout,
// every pointer at the block's first column: dx = f'(...) dy, and acc[k] += dx of column k, row
// by row in double (kernels::BiasActGradColumns's arithmetic, so the same bits for any n).
constexpr std::int64_t kGradColumns = 64;
COHORT_ACTIVATION_SPANS void bias_act_grad_columns_span(Activation f, float alpha, const float* x,
                                                        const float* y, const float* dy, float* dx,
                                                        std::int64_t rows, std::int64_t stride,
                                                        std::int64_t n, double* acc) {
  switch (f) {
    case Activation::identity:
      return grad_columns<Activation::identity>(alpha, x, y, dy, dx, rows, stride, n, acc);
    case Activation::relu:
      return grad_columns<Activation::relu>(alpha, x, y, dy, dx, rows, stride, n, acc);
    case Activation::leaky_relu:
      return grad_columns<Activation::leaky_relu>(alpha, x, y, dy, dx, rows, stride, n, acc);
    case Activation::gelu:
      return grad_columns<Activation::gelu>(alpha, x, y, dy, dx, rows, stride, n, acc);
    case Activation::sigmoid:
      return grad_columns<Activation::sigmoid>(alpha, x, y, dy, dx, rows, stride, n, acc);
    case Activation::tanh:
      return grad_columns<Activation::tanh>(alpha, x, y, dy, dx, rows, stride, n, acc);
  }
}

}  // namespace
}  // namespace cohort::host
