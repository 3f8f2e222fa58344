// Element-wise family: fill, cast, add (with the activation after it, for residual blocks), sub,
// mul, axpy, scale, clamp. The math functors (AddFn, ...)
// are the maps; the items apply them per element. An executor with transforms (Thrust) runs the
// maps as thrust::transform and fills as thrust::fill_n; the others run the items with for_each.
// Each element is computed once by the same functor either way, so results agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cohort/backend/op_calls.hpp"
#include "cohort/core/error.hpp"
#include "common/ops/activation.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

struct AddFn { COHORT_HD float operator()(float a, float b) const { return a + b; } };
template <Activation F>
struct AddActFn {  // the sum, rounded to f32, then the activation: add's then activation's bits
  float alpha;
  COHORT_HD float operator()(float a, float b) const { return Act<F>::f(a + b, alpha); }
};
struct SubFn { COHORT_HD float operator()(float a, float b) const { return a - b; } };
struct MulFn { COHORT_HD float operator()(float a, float b) const { return a * b; } };
struct ScaleFn {
  float alpha;
  COHORT_HD float operator()(float x) const { return alpha * x; }
};
struct ClampFn {  // NaN passes through (every comparison with it is false), as torch.clamp
  float lo, hi;
  COHORT_HD float operator()(float x) const { return x < lo ? lo : (x > hi ? hi : x); }
};
struct AxpyFn {  // y' = y + alpha x
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

// out[i] = f(a[i], b[i]) and out[i] = f(x[i]): Thrust's transform where the executor has one.
template <class Exec, class F>
void map2(Exec& e, const char* label, const float* a, const float* b, float* out, std::size_t n,
          const F& f) {
  if constexpr (has_transforms_v<Exec>)
    e.transform(a, b, out, n, f);
  else
    e.for_each(label, static_cast<i64>(n), Map2Item<F>{f, a, b, out});
}
template <class Exec, class F>
void map1(Exec& e, const char* label, const float* x, float* out, std::size_t n, const F& f) {
  if constexpr (has_transforms_v<Exec>)
    e.transform(x, out, n, f);
  else
    e.for_each(label, static_cast<i64>(n), Map1Item<F>{f, x, out});
}

// Calls fn(v) with the fill value converted to the element type of c.dtype (bf16, f16: its bits as
// std::uint16_t). The conversion happens here, on the host, exactly once for every backend and for
// every executor.
template <class Fn>
void with_fill_value(const calls::Fill& c, Fn&& fn) {
  switch (c.dtype) {
    case DType::f32: return fn(static_cast<float>(c.value));
    case DType::f64: return fn(c.value);
    case DType::bf16: return fn(float_to_bf16(static_cast<float>(c.value)));
    case DType::f16: return fn(float_to_f16(static_cast<float>(c.value)));
    case DType::i32: return fn(static_cast<std::int32_t>(c.value));
    case DType::i64: return fn(static_cast<std::int64_t>(c.value));
    case DType::u8: return fn(static_cast<std::uint8_t>(c.value));
  }
}
// Calls fn(S{}, D{}) with the cast op's element types (CastF32, ... above). The front end
// (ops::cast) admits only these four dtypes.
template <class Fn>
void with_cast_types(const calls::Cast& c, Fn&& fn) {
  auto with = [&](DType d, auto&& next) {
    switch (d) {
      case DType::f32: return next(CastF32{});
      case DType::f64: return next(CastF64{});
      case DType::bf16: return next(CastBf16{});
      case DType::f16: return next(CastF16{});
      default: COHORT_FAIL("cast: unsupported dtype ", dtype_name(d));
    }
  };
  with(c.src_dtype, [&](auto s) { with(c.dst_dtype, [&](auto d) { fn(s, d); }); });
}
template <class Exec>
void run(Exec& e, const calls::Cast& c) {
  with_cast_types(c, [&](auto s, auto d) {
    using S = decltype(s);
    using D = decltype(d);
    e.for_each("cohort::cast", static_cast<i64>(c.n),
               CastItem<S, D>{static_cast<const typename S::T*>(c.src),
                              static_cast<typename D::T*>(c.dst)});
  });
}
template <class Exec>
void run(Exec& e, const calls::Fill& c) {
  with_fill_value(c, [&](auto v) {
    using T = decltype(v);
    if constexpr (has_transforms_v<Exec>)
      e.fill_n(static_cast<T*>(c.x), c.n, v);
    else
      e.for_each("cohort::fill", static_cast<i64>(c.n), FillItem<T>{static_cast<T*>(c.x), v});
  });
}
template <class Exec>
void run(Exec& e, const calls::Add& c) {
  if (c.f == Activation::identity) return map2(e, "cohort::add", c.a, c.b, c.out, c.n, AddFn{});
  with_activation(c.f, [&](auto tag) {
    map2(e, "cohort::add", c.a, c.b, c.out, c.n, AddActFn<decltype(tag)::value>{c.alpha});
  });
}
template <class Exec>
void run(Exec& e, const calls::Sub& c) {
  map2(e, "cohort::sub", c.a, c.b, c.out, c.n, SubFn{});
}
template <class Exec>
void run(Exec& e, const calls::Mul& c) {
  map2(e, "cohort::mul", c.a, c.b, c.out, c.n, MulFn{});
}
template <class Exec>
void run(Exec& e, const calls::Axpy& c) {
  map2(e, "cohort::axpy", c.x, c.y, c.y, c.n, AxpyFn{c.alpha});
}
template <class Exec>
void run(Exec& e, const calls::Scale& c) {
  map1(e, "cohort::scale", c.x, c.out, c.n, ScaleFn{c.alpha});
}
template <class Exec>
void run(Exec& e, const calls::Clamp& c) {
  map1(e, "cohort::clamp", c.x, c.out, c.n, ClampFn{c.lo, c.hi});
}

}  // namespace cohort::kernels
