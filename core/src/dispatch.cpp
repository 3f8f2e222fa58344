// The fallback path of the op front ends (cohort/backend/dispatch.hpp): copy the operands to the
// host device, run the call there, copy the outputs back. Copies are synchronous, so the outputs
// are in place on the original device when this returns, like any other op.
#include "cohort/backend/dispatch.hpp"

#include <array>
#include <atomic>
#include <cstdio>

#include "cohort/core/error.hpp"

namespace cohort::dispatch {
namespace {

std::atomic<Device*> g_fallback{nullptr};
std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Op::count_)> g_counts{};

}  // namespace

const Tensor& Operands::resolve(const Tensor& t) const {
  for (const auto& [original, copy] : copies)
    if (original == &t) return copy;
  return t;
}

Device& fallback_device() {
  Device* d = g_fallback.load(std::memory_order_acquire);
  COHORT_CHECK(d != nullptr, "no fallback device: look a device up with cohort::device() first");
  return *d;
}

void set_fallback_device(Device& device) { g_fallback.store(&device, std::memory_order_release); }

std::uint64_t fallback_count(Op op) {
  return g_counts[static_cast<std::size_t>(op)].load(std::memory_order_relaxed);
}

void run_on_fallback(Device& device, const OpCall& call,
                     std::initializer_list<const Tensor*> inputs,
                     std::initializer_list<Tensor*> outputs, const MakeCall& make) {
  const Op op = op_of(call);
  Device& host = fallback_device();
  COHORT_CHECK(&host != &device, device.name(), " does not support ", op_name(op),
               " for this case, and it is the fallback device itself");
  Operands moved;
  const auto add_copy = [&](const Tensor* t) {
    if (t == nullptr || !t->defined()) return;
    for (const auto& c : moved.copies)
      if (c.first == t) return;
    moved.copies.emplace_back(t, t->to(host));
  };
  for (const Tensor* t : inputs) add_copy(t);
  for (Tensor* t : outputs) add_copy(t);  // copied too: some outputs accumulate or update in place
  const OpCall host_call = make(moved);
  COHORT_CHECK(host.supports(host_call), "neither ", device.name(), " nor the fallback device ",
               host.name(), " supports ", op_name(op), " for this case");
  if (g_counts[static_cast<std::size_t>(op)].fetch_add(1, std::memory_order_relaxed) == 0)
    std::fprintf(stderr, "cohort: %s does not support %s for this case; running it on %s "
                 "(copies both ways; said once per op)\n",
                 device.name().c_str(), op_name(op), host.name().c_str());
  host.run(host_call);
  for (Tensor* t : outputs)
    if (t != nullptr && t->defined()) t->copy_from(moved.resolve(*t));
}

}  // namespace cohort::dispatch
