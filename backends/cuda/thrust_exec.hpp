// The executor the CUDA device runs the shared op families on (backends/common/ops/): Thrust
// (CCCL) algorithms under a policy. thrust::for_each_n over a counting iterator runs the work
// items; maps are thrust::transform (on CUDA that is cub::DeviceTransform, vectorised loads) and
// fills thrust::fill_n, which the element-wise and random families use where an executor has them.
//
// The policy decides where it runs: the CUDA device passes thrust::cuda::par_nosync.on(stream)
// (op_table.cu); the CPU tests pass thrust::cpp::par with the same code compiled by g++
// (tests/backends/cuda/thrust/), so CPU-only CI runs every family through the algorithms the GPU
// runs. Plain C++ otherwise: no CUDA header here, so g++ compiles it.
//
// Contracts: none of these algorithms returns a value to the host or needs temporary storage, so
// on CUDA no call synchronises the device or allocates (thrust::reduce and the like would do
// both). Each element or item is computed once by the family's functor, so results equal every
// other executor's bit for bit. Outputs may coincide with an input (in place) but must not
// partially overlap it. The caller includes its policy's header
// (thrust/system/{cuda,cpp}/execution_policy.h).
#pragma once

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <cstddef>
#include <cstdint>

#include "common/ops/common.hpp"

namespace cohort::cuda {

template <class Policy>
class ThrustExec {
 public:
  explicit ThrustExec(const Policy& policy) : policy_(policy) {}
  // One work item per output element where a family offers it (kernels::has_fine_items): a GPU
  // thread per row or plane runs hundreds of serial, uncoalesced steps. The CPU tests run the
  // same decomposition through thrust::cpp::par.
  static constexpr bool kFineItems = true;

  // f(item) for item in [0, count).
  template <class F>
  void for_each(const char*, kernels::i64 count, const F& f) const {
    if (count <= 0) return;
    thrust::for_each_n(policy_, thrust::counting_iterator<kernels::i64>(0), count, f);
  }
  // out[i] = f(a[i], b[i]) and out[i] = f(x[i]) for i < n.
  template <class F>
  void transform(const float* a, const float* b, float* out, std::size_t n, const F& f) const {
    thrust::transform(policy_, a, a + n, b, out, f);
  }
  template <class F>
  void transform(const float* x, float* out, std::size_t n, const F& f) const {
    thrust::transform(policy_, x, x + n, out, f);
  }
  template <class T>
  void fill_n(T* x, std::size_t n, T v) const {
    thrust::fill_n(policy_, x, n, v);
  }
  // x[i] = g(offset + i): a counter-based generator over stream positions.
  template <class G>
  void generate(float* x, std::size_t n, std::uint64_t offset, const G& g) const {
    const thrust::counting_iterator<std::uint64_t> first(offset);
    thrust::transform(policy_, first, first + static_cast<std::int64_t>(n), x, g);
  }

 protected:
  const Policy& policy() const { return policy_; }

 private:
  Policy policy_;
};

}  // namespace cohort::cuda
