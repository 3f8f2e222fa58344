// Float exp and erf for the layer kernels (GELU, sigmoid, softmax), inline and branch-free on the
// host so that a loop calling them per element vectorises; on a GPU (__CUDA_ARCH__) they are the
// CUDA math library's expf / erff.
//
// Why: a call into libm per element keeps GCC from vectorising the element loop, and the ViT's
// step spent ~11% of its time in scalar erff / expf. These versions are straight-line float code
// (adds, multiplies, compares, float <-> int conversions, integer shifts and bit selects), so the
// same input gives the same bits whether the compiler vectorised the loop or not: every operation
// is an IEEE-754 single operation rounded to nearest, which SSE computes identically in scalar and
// packed form. That holds as long as nothing contracts a*b+c into an FMA or reassociates, which
// is the case for this project's builds (baseline x86-64, no -march, no -ffast-math); a build with
// FMA contraction would still be accurate, but not bit-identical to one without.
//
// The gain is in the vectorised loop only: called once per element from a loop that stays
// scalar, fast_exp is slower than glibc's table-driven expf (softmax forward went from 4.6 to
// 8.8 ns per element that way), so callers keep such calls in loops of their own (softmax's
// exponentials are computed in a pass before their sum; see ops/softmax_loss.hpp).
//
// Selects are bit masks (fast_math_detail::select), not `c ? a : b`: with GCC's default
// -ftrapping-math a ternary lets the optimiser move one arm's float operations under a branch
// (or thread the clamped constant through the rest of the function), and a loop with a branch
// does not vectorise.
//
// Contracts (measured over every float by an exhaustive scratch run, and over a dense sweep plus
// special values by tests/test_fast_math.cpp, against double-precision std::exp / std::erf):
//
//   fast_exp(x): max relative error 8.2e-8 (0.99 ulp) for normal results (x in [-87.33, 88.72]);
//     exp(+-0) = 1 exactly; x > 88.7228 (where exp(x) > FLT_MAX) gives +inf, +inf gives +inf;
//     subnormal results (x in [-103.97, -87.34]) within one 2^-149 step of the true value;
//     x < -103.98 gives +0, -inf gives +0; NaN gives NaN.
//     Method (Cephes expf): n = round(x / ln2) by adding and subtracting 1.5 * 2^23,
//     r = x - n ln2 in two steps (Cody-Waite: n * 0.693359375 is exact), exp(r) by the degree-7
//     Cephes polynomial on |r| <= ln2 / 2, then * 2^(n/2) * 2^(n - n/2) (two exact powers of two
//     built in the exponent bits, so results near overflow and in the subnormal range are rounded
//     once, where they land). x is first clamped to [-104, 89], which keeps n in range.
//
//   fast_erf(x): max absolute error 1.15e-7 (1.93 ulp; PyTorch's CPU erf, Abramowitz-Stegun
//     7.1.26 evaluated in float, is ~1.5e-7 in theory and 6.6e-7 as evaluated without FMA);
//     erf(-x) = -erf(x) bit for bit, erf(+-0) = +-0, erf(+-inf) = +-1, NaN gives NaN.
//     Method: |x| < 1: x + x * P(x^2), P of degree 5 (minimax for relative error, 4.0e-8 before
//     rounding the coefficients to float); |x| >= 1: 1 - exp(Q(min(|x|, 4))), Q of degree 7
//     (minimax for absolute error 3.3e-7 in log(erfc), i.e. <= 5.1e-8 in erf), with erf's sign.
//     Both branches are computed and one selected. The coefficients were fitted for this file by
//     a Remez exchange against double-precision erf / erfc.
//
// Rules as in ops/common.hpp: no allocation, no exceptions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/ops/common.hpp"

namespace cohort::kernels {

// Forced inline on the host: a call per element is what stops a loop from vectorising, and
// GCC's -O3 heuristics otherwise leave exp_host, fast_erf, or GELU's Act<>::f that calls it, out
// of line in the large host TU that runs every family (which of them depends on the size of everything else there).
// COHORT_HD_ALWAYS_INLINE is COHORT_HD that is always inlined on the host too (under nvcc,
// COHORT_HD is __forceinline__ already); the op families use it for the functions on the path
// from an element loop to these.
#if defined(__GNUC__)
#define COHORT_FAST_MATH_INLINE inline __attribute__((always_inline))
#else
#define COHORT_FAST_MATH_INLINE inline
#endif
#if defined(__CUDACC__)
#define COHORT_HD_ALWAYS_INLINE COHORT_HD
#else
#define COHORT_HD_ALWAYS_INLINE COHORT_FAST_MATH_INLINE
#endif

#if !defined(__CUDA_ARCH__)
namespace fast_math_detail {

COHORT_FAST_MATH_INLINE float as_float(std::int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
COHORT_FAST_MATH_INLINE std::int32_t as_int(float f) {
  std::int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}
// c ? a : b, as a bit mask: both a and b are computed, nothing branches.
COHORT_FAST_MATH_INLINE float select(bool c, float a, float b) {
  const std::int32_t m = -static_cast<std::int32_t>(c);
  return as_float((as_int(a) & m) | (as_int(b) & ~m));
}

COHORT_FAST_MATH_INLINE float exp_host(float x) {
  // Clamped so that n below stays within [-150, 129]; NaN passes both compares unchanged.
  float xc = select(x > 89.0f, 89.0f, x);
  xc = select(xc < -104.0f, -104.0f, xc);
  // n = round-to-nearest(x / ln2): adding 1.5 * 2^23 leaves no fraction bits.
  constexpr float kShift = 12582912.0f;
  const float n = (xc * 1.44269504088896341f + kShift) - kShift;
  float r = xc - n * 0.693359375f;  // ln2 = 0.693359375 - 2.12194440e-4 (Cody-Waite)
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n as two factors, each a normal float for n in [-150, 129]. A NaN n (x NaN) becomes 0 for
  // the integer conversion; p is NaN already, and so is the result.
  const std::int32_t k = static_cast<std::int32_t>(select(n == n, n, 0.0f));
  const std::int32_t k1 = k >> 1, k2 = k - k1;
  return p * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
}

COHORT_FAST_MATH_INLINE float erf_host(float x) {
  const float t = as_float(as_int(x) & 0x7fffffff);  // |x|
  // |x| < 1: erf(x) = x + x * P(x^2), P(0) = 2 / sqrt(pi) - 1.
  const float s = x * x;
  float p = -5.63142239e-4f;
  p = p * s + 4.91755130e-3f;
  p = p * s - 2.67113112e-2f;
  p = p * s + 1.12801798e-1f;
  p = p * s - 3.76123250e-1f;
  p = p * s + 1.28379121e-1f;
  const float small = x + x * p;
  // |x| >= 1: erf(|x|) = 1 - exp(Q(|x|)), Q ~ log(erfc); from |x| = 3.92 on, erf rounds to 1.
  const float tc = select(t < 4.0f, t, 4.0f);
  float q = -1.33454932e-5f;
  q = q * tc + 3.18189821e-4f;
  q = q * tc - 3.44125112e-3f;
  q = q * tc + 2.26386525e-2f;
  q = q * tc - 1.03355549e-1f;
  q = q * tc - 6.39047146e-1f;
  q = q * tc - 1.12595701e+0f;
  q = q * tc - 7.48410588e-4f;
  const float big = 1.0f - exp_host(q);
  const std::int32_t sign = as_int(x) & static_cast<std::int32_t>(0x80000000u);
  const float big_signed = as_float(as_int(big) | sign);  // big is in [0.84, 1]
  // NaN fails t >= 1 and takes the first branch, where it stays NaN.
  return select(t >= 1.0f, big_signed, small);
}

}  // namespace fast_math_detail
#endif

// exp(x); on the host to 1 ulp (contract above), on a GPU CUDA's expf.
COHORT_HD_ALWAYS_INLINE float fast_exp(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return fast_math_detail::exp_host(x);
#endif
}

// erf(x); on the host to 1.15e-7 absolute (contract above), on a GPU CUDA's erff.
COHORT_HD_ALWAYS_INLINE float fast_erf(float x) {
#if defined(__CUDA_ARCH__)
  return erff(x);
#else
  return fast_math_detail::erf_host(x);
#endif
}

}  // namespace cohort::kernels
