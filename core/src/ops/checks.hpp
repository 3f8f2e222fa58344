// The argument checks every op front end of core/src/ops/ shares. Each names the op and the
// argument at fault and reports the values ("add: shapes differ: 'a' is [2, 3], 'b' is [3, 2]").
// Internal to cohort_core.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/backend/layer_args.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::ops::detail {

using i64 = std::int64_t;

inline std::size_t count(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

inline void req_defined(const char* op, const char* arg, const Tensor& t) {
  COHORT_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor");
}

inline void req_dtype(const char* op, const char* arg, const Tensor& t, DType dt) {
  req_defined(op, arg, t);
  COHORT_CHECK(t.dtype() == dt, op, ": argument '", arg, "' must be ", dtype_name(dt), ", got ",
               dtype_name(t.dtype()), " (shape ", t.shape().str(), ")");
}

inline void req_f32(const char* op, const char* arg, const Tensor& t) {
  req_dtype(op, arg, t, DType::f32);
}

inline void req_same_device(const char* op, const Tensor& a, const char* an, const Tensor& b,
                            const char* bn) {
  COHORT_CHECK(&a.device() == &b.device(), op, ": '", an, "' is on ", a.device().name(),
               " but '", bn, "' is on ", b.device().name());
}

inline void req_shape(const char* op, const char* arg, const Tensor& t, const Shape& want) {
  COHORT_CHECK(t.shape() == want, op, ": '", arg, "' is ", t.shape().str(), ", expected ",
               want.str());
}

inline void req_same_shape(const char* op, const Tensor& a, const char* an, const Tensor& b,
                           const char* bn) {
  COHORT_CHECK(a.shape() == b.shape(), op, ": shapes differ: '", an, "' is ", a.shape().str(),
               ", '", bn, "' is ", b.shape().str());
}

// f32, the expected shape, and on the same device as `ref`.
inline void req_like(const char* op, const char* arg, const Tensor& t, const Shape& want,
                     const Tensor& ref, const char* ref_name) {
  req_f32(op, arg, t);
  req_shape(op, arg, t, want);
  req_same_device(op, ref, ref_name, t, arg);
}

inline int norm_axis(const char* op, int axis, const Tensor& t) {
  const int rank = static_cast<int>(t.rank());
  COHORT_CHECK(axis >= -rank && axis < rank, op, ": axis ", axis, " is out of range for a ",
               rank, "-D tensor ", t.shape().str());
  return axis < 0 ? axis + rank : axis;
}

// The tensor as [outer, channels, inner] around `axis`.
inline ChannelDims dims_around(const Shape& s, int axis) {
  ChannelDims d;
  for (int i = 0; i < axis; ++i) d.outer *= s[i];
  d.channels = s[axis];
  for (int i = axis + 1; i < static_cast<int>(s.rank()); ++i) d.inner *= s[i];
  return d;
}

}  // namespace cohort::ops::detail
