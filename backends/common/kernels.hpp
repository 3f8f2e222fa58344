// Element-wise math and the tensor ops' work items, written once. Every backend applies these
// functors: the host backend from a Kokkos parallel_for, the CUDA backend from one grid-stride
// kernel template, so CPU-only CI exercises exactly the arithmetic the GPU runs. Internal to
// backends/ (never installed): this is the only place the __host__ __device__ annotations live.
//
// Nothing here may allocate, throw or call the standard library beyond <cstdint>/<cmath>
// functions that nvcc also provides on the device. The random numbers come from the public,
// constexpr Philox of cohort/core/rng.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cohort/core/dtype.hpp"
#include "cohort/core/rng.hpp"

#if defined(__CUDACC__)
#define COHORT_HD __host__ __device__ __forceinline__
#else
#define COHORT_HD inline
#endif

namespace cohort::kernels {

using i64 = std::int64_t;
using rng::U32x4;
using rng::philox_block;
using rng::u32_to_unit;
using rng::u32_to_unit_open0;

struct Add { COHORT_HD float operator()(float a, float b) const { return a + b; } };
struct Sub { COHORT_HD float operator()(float a, float b) const { return a - b; } };
struct Mul { COHORT_HD float operator()(float a, float b) const { return a * b; } };
struct Scale {
  float alpha;
  COHORT_HD float operator()(float x) const { return alpha * x; }
};
struct Axpy {  // y' = y + alpha x
  float alpha;
  COHORT_HD float operator()(float x, float y) const { return y + alpha * x; }
};

// ---- work items (one element or one row per item) ----

template <class T>
struct FillItem {  // item: element
  T* x;
  T v;
  COHORT_HD void operator()(i64 i) const { x[i] = v; }
};

// The element types of the cast op: storage type T and the widening / narrowing through float (or
// double, where f64 is involved: kWide). bf16 and f16 are both std::uint16_t, hence the tags.
struct CastF32 {
  using T = float;
  static constexpr bool kWide = false;
  static COHORT_HD float to_float(T x) { return x; }
  static COHORT_HD T from_float(float x) { return x; }
};
struct CastF64 {
  using T = double;
  static constexpr bool kWide = true;
};
struct CastBf16 {
  using T = std::uint16_t;
  static constexpr bool kWide = false;
  static COHORT_HD float to_float(T x) { return bf16_to_float(x); }
  static COHORT_HD T from_float(float x) { return float_to_bf16(x); }
};
struct CastF16 {
  using T = std::uint16_t;
  static constexpr bool kWide = false;
  static COHORT_HD float to_float(T x) { return f16_to_float(x); }
  static COHORT_HD T from_float(float x) { return float_to_f16(x); }
};
template <class S, class D>
struct CastItem {  // item: element
  const typename S::T* src;
  typename D::T* dst;
  COHORT_HD void operator()(i64 i) const {
    if constexpr (std::is_same_v<S, D>) {
      dst[i] = src[i];
    } else if constexpr (std::is_same_v<S, CastF64>) {
      dst[i] = D::from_float(static_cast<float>(src[i]));  // f64 -> 16 bits: through f32
    } else if constexpr (std::is_same_v<D, CastF64>) {
      dst[i] = static_cast<double>(S::to_float(src[i]));  // exact
    } else {
      dst[i] = D::from_float(S::to_float(src[i]));
    }
  }
};

template <class F>
struct Map1Item {  // item: element; out may alias x
  F f;
  const float* x;
  float* out;
  COHORT_HD void operator()(i64 i) const { out[i] = f(x[i]); }
};

template <class F>
struct Map2Item {  // item: element; out may alias a or b
  F f;
  const float* a;
  const float* b;
  float* out;
  COHORT_HD void operator()(i64 i) const { out[i] = f(a[i], b[i]); }
};

template <class G>
struct GenerateItem {  // item: element; x[i] = g(stream position offset + i)
  G g;
  float* x;
  std::uint64_t offset;
  COHORT_HD void operator()(i64 i) const { x[i] = g(offset + static_cast<std::uint64_t>(i)); }
};

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

struct ScaleRowItem {  // item: row of a strided matrix; beta == 0 writes zeros (NaN does not survive)
  float* c;
  i64 cols, ldc;
  float beta;
  i64 cost() const { return cols; }
  COHORT_HD void operator()(i64 r) const {
    for (i64 j = 0; j < cols; ++j) c[r * ldc + j] = beta == 0.0f ? 0.0f : beta * c[r * ldc + j];
  }
};

// ---- Philox-based fills (stream position p -> value) ----

struct UniformAt {
  std::uint64_t seed;
  float lo, hi;
  COHORT_HD float operator()(std::uint64_t p) const { return rng::uniform_at(seed, p, lo, hi); }
};

// Box-Muller on lane pairs (0,1) and (2,3) of a block: even lanes take the cosine, odd the sine.
struct NormalAt {
  std::uint64_t seed;
  float mean, stddev;
  COHORT_HD float operator()(std::uint64_t p) const {
    const U32x4 r = philox_block(seed, p >> 2);
    const unsigned lane = static_cast<unsigned>(p & 3);
    const unsigned pair = lane & 2u;
    const float u1 = u32_to_unit_open0(r.v[pair]);
    const float u2 = u32_to_unit(r.v[pair + 1]);
    const float radius = sqrtf(-2.0f * logf(u1));
    const float theta = 6.28318530717958647692f * u2;
    const float z = (lane & 1u) ? radius * sinf(theta) : radius * cosf(theta);
    return mean + stddev * z;
  }
};

}  // namespace cohort::kernels
