// The host device's op table: the shared implementation of backends/common/op_impl.hpp run by the
// executor below. This file only says how the host launches work (a Kokkos parallel_for on the
// calling thread), where its GEMM goes (oneDNN) and where scratch memory comes from.
#include <Kokkos_Core.hpp>

#include <cstdlib>

#include "cohort/core/error.hpp"
#include "common/op_impl.hpp"
#include "host_device.hpp"

namespace cohort::host {
namespace {

struct HostExec {
  template <class F>
  void for_each(const char* label, std::int64_t count, const F& f) const {
    if (count <= 0) return;
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Kokkos::Serial, Kokkos::IndexType<std::int64_t>>(0, count), f);
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

}  // namespace

bool HostDevice::supports(const OpCall& call) const { return kernels::shared_supports(call); }

void HostDevice::run(const OpCall& call) {
  HostExec e;
  kernels::run_call(e, call);
}

}  // namespace cohort::host
