// The "thrust-host" test device (thrust_host_device.hpp says why): the CUDA device's executor on
// Thrust's CPP system, with launches counted per op.
#include "thrust_host_device.hpp"

#include <thrust/system/cpp/execution_policy.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "cohort/devices.hpp"
#include "common/host_memory_device.hpp"
#include "common/ops/run_call.hpp"
#include "cuda/thrust_exec.hpp"

namespace cohort::testing {
namespace {

std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Op::count_)> g_thrust_calls{},
    g_thrust_items{}, g_thrust_gemms{};
std::atomic<std::uint64_t> g_thrust_launches{0};  // every Thrust algorithm call: a kernel on a GPU

using CppPolicy = decltype(thrust::cpp::par);

// The CUDA device's executor (backends/cuda/thrust_exec.hpp) on Thrust's CPP system, with the
// host device's GEMM in place of cuBLAS. Every launch is counted, so a test can tell which ops
// reached Thrust.
class ThrustHostExec : public cuda::ThrustExec<CppPolicy> {
 public:
  ThrustHostExec() : cuda::ThrustExec<CppPolicy>(thrust::cpp::par) {}
  bool used = false;
  std::uint64_t items = 0;  // work items for_each launched
  std::uint64_t gemms = 0;  // GEMMs handed to the host device

  template <class F>
  void for_each(const char* label, kernels::i64 count, const F& f) {
    used = true;
    ++g_thrust_launches;
    if (count > 0) items += static_cast<std::uint64_t>(count);
    ThrustExec::for_each(label, count, f);
  }
  template <class... A>
  void transform(A&&... a) {
    used = true;
    ++g_thrust_launches;
    ThrustExec::transform(std::forward<A>(a)...);
  }
  template <class T>
  void fill_n(T* x, std::size_t n, T v) {
    used = true;
    ++g_thrust_launches;
    ThrustExec::fill_n(x, n, v);
  }
  template <class G>
  void generate(float* x, std::size_t n, std::uint64_t offset, const G& g) {
    used = true;
    ++g_thrust_launches;
    ThrustExec::generate(x, n, offset, g);
  }
  void gemm(const GemmArgs& g) {
    ++gemms;
    calls::Gemm c;
    static_cast<GemmArgs&>(c) = g;
    host_device().run(OpCall{c});  // this device's memory is host memory
  }
  float* scratch(std::size_t floats) {
    buffer_.resize(floats);
    return buffer_.data();
  }

 private:
  std::vector<float> buffer_;
};

class ThrustHostDevice final : public HostMemoryDevice {
 public:
  std::string name() const override { return "thrust-host"; }
  bool supports(const OpCall&) const override { return true; }
  void run(const OpCall& call) override {
    ThrustHostExec e;
    kernels::run_call(e, call);
    if (e.used) ++g_thrust_calls[static_cast<std::size_t>(op_of(call))];
    g_thrust_items[static_cast<std::size_t>(op_of(call))] += e.items;
    g_thrust_gemms[static_cast<std::size_t>(op_of(call))] += e.gemms;
  }
};

}  // namespace

Device& thrust_host_device() {
  static ThrustHostDevice* d = new ThrustHostDevice();  // never destroyed, like every device
  return *d;
}

bool thrust_covers(Op op) { return op != Op::gemm && op != Op::gemm_batched; }

std::uint64_t thrust_calls(Op op) { return g_thrust_calls[static_cast<std::size_t>(op)]; }

std::uint64_t thrust_items(Op op) { return g_thrust_items[static_cast<std::size_t>(op)]; }

std::uint64_t thrust_gemms(Op op) { return g_thrust_gemms[static_cast<std::size_t>(op)]; }

std::uint64_t thrust_launches() { return g_thrust_launches; }

}  // namespace cohort::testing
