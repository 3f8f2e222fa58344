// What every op family of backends/common/ops/ builds on: COHORT_HD (the functors are written
// once, compiled by the host compiler and by nvcc), the index type, the blocked sums reductions
// accumulate with, and the executor contract.
//
// An executor is what a backend hands the families' run(Exec&, const calls::X&) templates:
//
//   template <class F> void for_each(const char* label, i64 count, const F& f);
//       runs f(item) for item in [0, count) (host: Kokkos parallel_for split between threads;
//       CUDA and the Thrust test device: thrust::for_each_n), ordered after everything before it;
//   void gemm(const GemmArgs& g);            the device's own GEMM (oneDNN on the host, cuBLAS),
//                                            called with m, n, k >= 1;
//   float* scratch(std::size_t floats);      device memory for at least `floats` floats, valid
//                                            until the op returns (ops ask once per call).
//
// and optionally (backends/cuda/thrust_exec.hpp has them) transform/fill_n/generate members, which
// the element-wise and random families use for maps and fills instead of for_each.
//
// Functors are "work items" (operator()(i64 item)): an element, a row, a plane or a channel.
// `i64 cost() const` (host only) says about how many elements one item touches, so the host
// splits a launch between threads only when it pays (HostExec in backends/host/op_table.cpp). Items
// never write memory another item writes: no atomics, results independent of the thread count.
//
// Rules for everything under ops/: no allocation, no exceptions, only <cmath> functions nvcc also
// provides on the device. Random numbers come from the constexpr Philox of cohort/core/rng.hpp.
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
using rng::philox_block;
using rng::u32_to_unit;
using rng::u32_to_unit_open0;
using rng::U32x4;

// Whether an executor runs maps and fills its own way (has transform/fill_n/generate members).
template <class Exec, class = void>
struct has_transforms : std::false_type {};
template <class Exec>
struct has_transforms<Exec, std::void_t<decltype(&Exec::template fill_n<float>)>> : std::true_type {
};
template <class Exec>
inline constexpr bool has_transforms_v = has_transforms<Exec>::value;

// Whether an executor wants one work item per output element (Exec::kFineItems: a GPU, where
// thousands of threads each need little work and coalesced access) rather than one per row or
// plane (the host, where an item is a core's loop the compiler vectorises). A family that offers
// both decompositions computes every element with the same operations in the same order in both,
// so results are bit-identical whichever runs. The exception is a sum over many rows split into
// stages for the GPU (layer norm's parameter gradients, norm.hpp): the same terms in double,
// grouped differently, so equal within double rounding; the family says so where it does it.
template <class Exec, class = void>
struct has_fine_items : std::false_type {};
template <class Exec>
struct has_fine_items<Exec, std::void_t<decltype(Exec::kFineItems)>>
    : std::integral_constant<bool, Exec::kFineItems> {};
template <class Exec>
inline constexpr bool has_fine_items_v = has_fine_items<Exec>::value;

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

// Windowed ops (convolution, pooling): the output columns j in [lo, hi) whose tap lands inside [0,
// extent): 0 <= j*stride + off < extent.
COHORT_HD void valid_range(i64 off, i64 stride, i64 extent, i64 outs, i64& lo, i64& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = extent - 1 - off < 0 ? 0 : (extent - 1 - off) / stride + 1;
  if (hi > outs) hi = outs;
  if (lo > hi) lo = hi;
}

}  // namespace cohort::kernels
