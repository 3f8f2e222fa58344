// A device that supports only part of the op table, for the fallback tests: its memory is host
// memory of its own (so it is a distinct device and the fallback copies operands), and the ops it
// claims run on the host device's implementation. It denies whole ops (convolutions, pooling
// backward, Adadelta) and single cases of others (gemm with a transposed A, log-softmax), so both
// kinds of "no" from supports() are exercised.
#pragma once

#include <type_traits>
#include <variant>

#include "cohort/backend/op_list.hpp"
#include "cohort/devices.hpp"
#include "common/host_memory_device.hpp"

namespace cohort::testing {

class PartialDevice final : public HostMemoryDevice {
 public:
  std::string name() const override { return "partial"; }

  bool supports(const OpCall& call) const override {
    return std::visit(
        [](const auto& c) {
          using C = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<C, calls::Conv2dForward> ||
                        std::is_same_v<C, calls::Conv2dBackwardData> ||
                        std::is_same_v<C, calls::Conv2dBackwardFilter> ||
                        std::is_same_v<C, calls::Pool2dBackward> ||
                        std::is_same_v<C, calls::AdadeltaStep>)
            return false;
          else if constexpr (std::is_same_v<C, calls::Gemm>)
            return !c.trans_a;
          else if constexpr (std::is_same_v<C, calls::SoftmaxForward> ||
                             std::is_same_v<C, calls::SoftmaxBackward>)
            return !c.log;
          else
            return true;
        },
        call);
  }
  void run(const OpCall& call) override {
    COHORT_CHECK(supports(call), "partial device asked to run ", op_name(op_of(call)),
                 " which it does not support");
    host_device().run(call);  // its pointers are host memory
  }
};

inline Device& partial_device() {
  static PartialDevice* d = new PartialDevice();
  return *d;
}

}  // namespace cohort::testing
