#include "thrust_host_device.hpp"

#include <thrust/system/cpp/execution_policy.h>

#include <array>
#include <atomic>
#include <utility>
#include <variant>

#include "cohort/devices.hpp"
#include "common/host_memory_device.hpp"
#include "common/thrust_ops.hpp"

namespace cohort::testing {
namespace {

std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Op::count_)> g_thrust_calls{};

class ThrustHostDevice final : public HostMemoryDevice {
 public:
  std::string name() const override { return "thrust-host"; }
  bool supports(const OpCall&) const override { return true; }
  void run(const OpCall& call) override {
    if (thrust_ops::run_if_covered(thrust::cpp::par, call))
      ++g_thrust_calls[static_cast<std::size_t>(op_of(call))];
    else
      host_device().run(call);  // its pointers are host memory
  }
};

}  // namespace

Device& thrust_host_device() {
  static ThrustHostDevice* d = new ThrustHostDevice();  // never destroyed, like every device
  return *d;
}

namespace {
template <std::size_t... I>
bool covers_index(std::size_t op, std::index_sequence<I...>) {
  bool covered = false;
  ((covered = covered || (op == I && thrust_ops::covers(OpCall(std::in_place_index<I>)))), ...);
  return covered;
}
}  // namespace

bool thrust_covers(Op op) {
  return covers_index(static_cast<std::size_t>(op),
                      std::make_index_sequence<std::variant_size_v<OpCall::Variant>>{});
}

std::uint64_t thrust_calls(Op op) { return g_thrust_calls[static_cast<std::size_t>(op)]; }

}  // namespace cohort::testing
