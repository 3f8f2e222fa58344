// The ops that are element-wise maps, per-element updates or per-row reductions, run through Thrust
// (CCCL) instead of an executor's for_each. The math is the functors of kernels.hpp,
// layer_kernels.hpp and optim_kernels.hpp; this file only picks the Thrust algorithm:
// thrust::transform for maps (on CUDA that is cub::DeviceTransform, vectorised loads instead of
// one grid-stride thread per element), thrust::fill_n for fills, thrust::for_each_n over a
// counting_iterator for work items that update several arrays or reduce one row.
//
// The policy decides where it runs: the CUDA device passes thrust::cuda::par_nosync.on(stream)
// (backends/cuda/cuda_ops.cu); the CPU tests pass thrust::cpp::par with the same code compiled by
// g++ (tests/backends/cuda/thrust/), so CPU-only CI runs the algorithms the GPU runs.
//
// Contracts:
// - Nothing here returns a value to the host or needs temporary storage, so on CUDA no call
//   synchronises the device or allocates (thrust::reduce, reduce_by_key and the like would do
//   both); row reductions are one work item per row (RowSumItem accumulates in double, RowMaxItem
//   and RowArgmaxItem let NaN win, argmax takes the first maximal column), as on every backend.
// - Element-wise results equal the shared implementation's bit for bit: the same functor computes
//   each element, and each element is computed exactly once.
// - Outputs may coincide with an input (in place) but must not partially overlap it, which is what
//   thrust::transform allows and what the grid-stride kernels already needed.
// - The caller includes its policy's header (thrust/system/{cuda,cpp}/execution_policy.h); this
//   file includes only the algorithms.
#pragma once

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <cstdint>
#include <type_traits>
#include <variant>

#include "cohort/backend/op_list.hpp"
#include "common/op_impl.hpp"  // with_fill_value; kernels.hpp, layer_kernels.hpp, optim_kernels.hpp

namespace cohort::thrust_ops {

using kernels::i64;

namespace detail {

// f(item) for item in [0, count).
template <class Policy, class F>
void for_each_item(const Policy& p, i64 count, const F& f) {
  thrust::for_each_n(p, thrust::counting_iterator<i64>(0), count, f);
}

// x[i] = g(offset + i): a counter-based generator over stream positions.
template <class Policy, class G>
void generate_at(const Policy& p, float* x, std::size_t n, std::uint64_t offset, const G& g) {
  const thrust::counting_iterator<std::uint64_t> first(offset);
  thrust::transform(p, first, first + static_cast<std::int64_t>(n), x, g);
}

template <class Policy, class F>
void map2(const Policy& p, const float* a, const float* b, float* out, std::size_t n, const F& f) {
  thrust::transform(p, a, a + n, b, out, f);
}

}  // namespace detail

// ---- tensor ops ----

template <class Policy>
void run(const Policy& p, const calls::Fill& c) {
  kernels::with_fill_value(c, [&](auto v) {
    using T = decltype(v);
    thrust::fill_n(p, static_cast<T*>(c.x), c.n, v);
  });
}
template <class Policy>
void run(const Policy& p, const calls::Cast& c) {
  kernels::with_cast_types(c, [&](auto s, auto d) {
    using S = decltype(s);
    using D = decltype(d);
    detail::for_each_item(p, static_cast<i64>(c.n),
                          kernels::CastItem<S, D>{static_cast<const typename S::T*>(c.src),
                                                  static_cast<typename D::T*>(c.dst)});
  });
}
template <class Policy>
void run(const Policy& p, const calls::Add& c) {
  detail::map2(p, c.a, c.b, c.out, c.n, kernels::Add{});
}
template <class Policy>
void run(const Policy& p, const calls::Sub& c) {
  detail::map2(p, c.a, c.b, c.out, c.n, kernels::Sub{});
}
template <class Policy>
void run(const Policy& p, const calls::Mul& c) {
  detail::map2(p, c.a, c.b, c.out, c.n, kernels::Mul{});
}
template <class Policy>
void run(const Policy& p, const calls::Axpy& c) {
  detail::map2(p, c.x, c.y, c.y, c.n, kernels::Axpy{c.alpha});
}
template <class Policy>
void run(const Policy& p, const calls::Scale& c) {
  thrust::transform(p, c.x, c.x + c.n, c.out, kernels::Scale{c.alpha});
}
template <class Policy>
void run(const Policy& p, const calls::ReduceSum& c) {
  detail::for_each_item(p, static_cast<i64>(c.rows),
                        kernels::RowSumItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Policy>
void run(const Policy& p, const calls::ReduceMax& c) {
  detail::for_each_item(p, static_cast<i64>(c.rows),
                        kernels::RowMaxItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Policy>
void run(const Policy& p, const calls::Argmax& c) {
  detail::for_each_item(p, static_cast<i64>(c.rows),
                        kernels::RowArgmaxItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Policy>
void run(const Policy& p, const calls::FillUniform& c) {
  detail::generate_at(p, c.x, c.n, c.offset, kernels::UniformAt{c.seed, c.lo, c.hi});
}
template <class Policy>
void run(const Policy& p, const calls::FillNormal& c) {
  detail::generate_at(p, c.x, c.n, c.offset, kernels::NormalAt{c.seed, c.mean, c.stddev});
}

// ---- layer ops that are maps ----

template <class Policy>
void run(const Policy& p, const calls::ActivationForward& c) {
  kernels::dispatch_activation(c.f, [&](auto tag) {
    detail::for_each_item(p, static_cast<i64>(c.n),
                          kernels::ActForward<decltype(tag)::value>{c.alpha, c.x, c.y});
  });
}
template <class Policy>
void run(const Policy& p, const calls::ActivationBackward& c) {
  kernels::dispatch_activation(c.f, [&](auto tag) {
    detail::for_each_item(
        p, static_cast<i64>(c.n),
        kernels::ActBackward<decltype(tag)::value>{c.alpha, c.x, c.y, c.dy, c.dx});
  });
}
// An item is DropoutBlocks::kBlocks Philox blocks (32 elements), as on every backend, so the mask
// is the same function of (seed, step, index) everywhere.
template <class Policy>
void run(const Policy& p, const calls::DropoutForward& c) {
  const i64 n = static_cast<i64>(c.n);
  detail::for_each_item(p, kernels::DropoutBlocks::items(n),
                        kernels::DropoutBlocks{c.a, n, c.x, c.y});
}
template <class Policy>
void run(const Policy& p, const calls::DropoutBackward& c) {
  const i64 n = static_cast<i64>(c.n);
  detail::for_each_item(p, kernels::DropoutBlocks::items(n),
                        kernels::DropoutBlocks{c.a, n, c.dy, c.dx});
}

// ---- optimizer steps: one fused update per element ----

template <class Policy>
void run(const Policy& p, const calls::SgdStep& c) {
  detail::for_each_item(p, static_cast<i64>(c.n),
                        kernels::SgdUpdate{c.a, c.param, c.grad, c.momentum_buffer});
}
template <class Policy>
void run(const Policy& p, const calls::AdamStep& c) {
  kernels::visit_adam(c.a, c.param, c.grad, c.exp_avg, c.exp_avg_sq, c.max_exp_avg_sq,
                      [&](const auto& update) {
                        detail::for_each_item(p, static_cast<i64>(c.n), update);
                      });
}
template <class Policy>
void run(const Policy& p, const calls::AdadeltaStep& c) {
  kernels::visit_adadelta(c.a, c.param, c.grad, c.square_avg, c.acc_delta,
                          [&](const auto& update) {
                            detail::for_each_item(p, static_cast<i64>(c.n), update);
                          });
}
template <class Policy>
void run(const Policy& p, const calls::RmspropStep& c) {
  detail::for_each_item(
      p, static_cast<i64>(c.n),
      kernels::RmspropUpdate{c.a, c.param, c.grad, c.square_avg, c.grad_avg, c.momentum_buffer});
}

// ---- which calls go through Thrust ----

// Every case of these ops is covered; a call type listed here must have a run() above (the
// compiler says so in run_if_covered).
template <class C>
inline constexpr bool covered_v =
    std::is_same_v<C, calls::Fill> || std::is_same_v<C, calls::Cast> ||
    std::is_same_v<C, calls::Add> ||
    std::is_same_v<C, calls::Sub> || std::is_same_v<C, calls::Mul> ||
    std::is_same_v<C, calls::Axpy> || std::is_same_v<C, calls::Scale> ||
    std::is_same_v<C, calls::ReduceSum> || std::is_same_v<C, calls::ReduceMax> ||
    std::is_same_v<C, calls::Argmax> || std::is_same_v<C, calls::FillUniform> ||
    std::is_same_v<C, calls::FillNormal> || std::is_same_v<C, calls::ActivationForward> ||
    std::is_same_v<C, calls::ActivationBackward> || std::is_same_v<C, calls::DropoutForward> ||
    std::is_same_v<C, calls::DropoutBackward> || std::is_same_v<C, calls::SgdStep> ||
    std::is_same_v<C, calls::AdamStep> || std::is_same_v<C, calls::AdadeltaStep> ||
    std::is_same_v<C, calls::RmspropStep>;

inline bool covers(const OpCall& call) {
  return std::visit([](const auto& c) { return covered_v<std::decay_t<decltype(c)>>; }, call);
}

// Runs the call through Thrust and returns true, or returns false (having done nothing) for a call
// this file does not cover, which the caller then runs its own way.
template <class Policy>
bool run_if_covered(const Policy& p, const OpCall& call) {
  return std::visit(
      [&](const auto& c) {
        if constexpr (covered_v<std::decay_t<decltype(c)>>) {
          thrust_ops::run(p, c);
          return true;
        } else {
          return false;
        }
      },
      call);
}

}  // namespace cohort::thrust_ops
