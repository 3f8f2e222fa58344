// What the cuDNN seam's CPU tests share (test_cudnn_conv.cpp, test_cudnn_norm.cpp): random host
// tensors, the parity table's error measure and cuDNN's documented blend. The seams' values are
// executed by naive references written from cuDNN's documentation (cudnn_cnn.h / cudnn_ops.h) and
// compared with the host device's result for the same inputs through the op front ends; the
// references read only the seam's values (never the op's args), so a wrong pad, stride, blend
// factor or averaging factor in a seam shows up as a wrong number. No GPU runs here.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "cuda/seams/cudnn_values.hpp"

namespace cohort::test_cudnn {

using namespace cohort::cuda::seams;
namespace ce = cohort::cuda::seams::cudnn_enum;

using Vec = std::vector<float>;

inline Tensor uni(const Shape& s, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Tensor::uniform(s, lo, hi, seed, host_device());
}
inline Vec values(const Tensor& t) { return t.to_vector<float>(); }

// The parity table's measure: max |a - b| / (1 + |b|); infinite when the sizes differ.
inline double rel_diff(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(a[i]) - b[i]) / (1.0 + std::fabs(double(b[i]))));
  return worst;
}

// cuDNN's blend: out = alpha * result + beta * out; beta == 0 does not read out (cuDNN's
// documented scaling-parameter rule), so NaN there does not propagate.
inline float blend(float alpha, double result, float beta, float old) {
  return static_cast<float>(beta == 0.0f ? alpha * result : alpha * result + double(beta) * old);
}

inline std::size_t numel(const Tensor4d& t) {
  return static_cast<std::size_t>(t.n) * t.c * t.h * t.w;
}

}  // namespace cohort::test_cudnn
