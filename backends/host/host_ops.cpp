// The host device's op table: the shared implementation of backends/common/op_impl.hpp run by the
// executor below. This file only says how the host launches work (Kokkos parallel_fors split
// between the host's OpenMP threads), where its GEMM goes (oneDNN), where scratch memory comes
// from, and which ops go to oneDNN's primitives instead (the convolutions, host_conv.cpp), as the
// CUDA device sends them to cuDNN.
#include <Kokkos_Core.hpp>
#include <omp.h>

#include <cstdlib>

#include "cohort/core/error.hpp"
#include "common/op_impl.hpp"
#include "host_conv.hpp"
#include "host_device.hpp"
#include "thread_governor.hpp"

namespace cohort::host {
namespace {

using i64 = std::int64_t;

// A functor's elements per item (layer_kernels.hpp): its cost() where it has one, else 1.
template <class F>
auto item_cost(const F& f, int) -> decltype(f.cost()) {
  return f.cost();
}
template <class F>
i64 item_cost(const F&, long) {
  return 1;
}

// How many threads a launch of `work` elements gets: the GEMM's count (host_threads.cpp, and the
// governor's 1 while other processes keep the CPUs busy), but none beyond the first for less than
// kWorkPerThread elements each. Waking a sleeping OpenMP thread costs several microseconds; 16K
// elements take about as long on one core, so smaller launches stay on the calling thread. Never
// nested: a launch from inside an OpenMP team (a user's parallel region) runs on its caller.
constexpr i64 kWorkPerThread = 16384;
int launch_threads(i64 count, i64 work) {
  if (work < 2 * kWorkPerThread || count < 2 || omp_in_parallel() || in_forked_child()) return 1;
  follow_contention();
  const i64 by_work = work / kWorkPerThread;
  i64 n = omp_get_max_threads();
  if (by_work < n) n = by_work;
  if (count < n) n = count;
  return static_cast<int>(n);
}

struct HostExec {
  // Items in [0, count), split into one contiguous range per thread, each range a Kokkos
  // parallel_for on the host execution space (Serial: Debian's Kokkos has no threaded host space).
  // Items write disjoint memory (layer_kernels.hpp), so the split changes no result.
  template <class F>
  void for_each(const char* label, i64 count, const F& f) const {
    if (count <= 0) return;
    using Range = Kokkos::RangePolicy<Kokkos::Serial, Kokkos::IndexType<i64>>;
    const int threads = launch_threads(count, count * item_cost(f, 0));
    if (threads <= 1) return Kokkos::parallel_for(label, Range(0, count), f);
#pragma omp parallel num_threads(threads)
    {
      const i64 t = omp_get_thread_num(), n = omp_get_num_threads();
      const i64 begin = count * t / n, end = count * (t + 1) / n;
      if (begin < end) Kokkos::parallel_for(label, Range(begin, end), f);
    }
  }
  void gemm(const GemmArgs& g) const { sgemm(g); }
  // One grow-only buffer per thread: ops on the host run on the calling thread, so two threads
  // sharing the device never share scratch memory.
  float* scratch(std::size_t floats) const {
    struct Buffer {
      float* p = nullptr;
      std::size_t n = 0;
      ~Buffer() { std::free(p); }
    };
    thread_local Buffer buf;
    if (floats > buf.n) {
      std::free(buf.p);
      buf.p = nullptr;
      buf.n = 0;
      const std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      buf.p = static_cast<float*>(std::aligned_alloc(64, bytes));
      COHORT_CHECK_IN("host", buf.p != nullptr, "out of host memory allocating ", bytes,
                      " bytes of scratch for a layer op");
      buf.n = floats;
    }
    return buf.p;
  }
};

// ---- oneDNN's ops (found by argument-dependent lookup from kernels::run_call) ----

void run(HostExec& e, const calls::Conv2dForward& c) {
  if (!onednn_conv_forward(c)) return kernels::run(e, c);
  kernels::conv2d_bias_act_pass(e, c.a, nullptr, c.y);  // oneDNN added the bias
}
// Batched GEMM (attention's per-head products): the batch split between the threads, each GEMM
// on one thread (oneDNN's sgemm runs sequentially inside a team), because the products are too
// small to split (the ViT's 65 x 65 x 32). Each GEMM is the same call as on one thread.
void run(HostExec& e, const calls::GemmBatched& c) {
  const int threads = c.m == 0 || c.n == 0 || c.k == 0
                          ? 1
                          : launch_threads(c.batch, c.batch * (c.m * c.n * c.k / 8));
  if (threads <= 1) return kernels::run(e, c);
#pragma omp parallel num_threads(threads)
  {
    const i64 t = omp_get_thread_num(), n = omp_get_num_threads();
    for (i64 i = c.batch * t / n; i < c.batch * (t + 1) / n; ++i) {
      GemmArgs g = c;
      g.a = c.a + i * c.stride_a;
      g.b = c.b + i * c.stride_b;
      g.c = c.c + i * c.stride_c;
      sgemm(g);
    }
  }
}
void run(HostExec& e, const calls::Conv2dBackwardData& c) {
  if (!onednn_conv_backward_data(c)) kernels::run(e, c);
}
void run(HostExec& e, const calls::Conv2dBackwardFilter& c) {
  if (!onednn_conv_backward_filter(c)) return kernels::run(e, c);
  kernels::conv2d_bias_grad_pass(e, c);
}

}  // namespace

bool HostDevice::supports(const OpCall& call) const { return kernels::shared_supports(call); }

void HostDevice::run(const OpCall& call) {
  HostExec e;
  kernels::run_call(e, call);
}

}  // namespace cohort::host
