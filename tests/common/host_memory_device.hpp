// The memory half of a test device: host memory of its own (so it is a distinct device and the op
// front ends copy operands to and from it as they would for a GPU), synchronous copies, nothing to
// wait for. The test devices (tests/parity/partial_device.hpp, tests/backends/cuda/thrust/) add
// name, supports() and run(), and may hand their calls to the host device's implementation because
// their pointers are host memory.
#pragma once

#include <cstdlib>
#include <cstring>

#include "cohort/core/device.hpp"

namespace cohort::testing {

class HostMemoryDevice : public Device {
 public:
  DeviceType type() const override { return DeviceType::host; }
  bool host_accessible() const override { return true; }
  void* allocate(std::size_t bytes) override {
    return bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr;
  }
  void deallocate(void* p, std::size_t) noexcept override { std::free(p); }
  void copy_from_host(void* d, const void* s, std::size_t n) override { std::memmove(d, s, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) override { std::memmove(d, s, n); }
  void copy(void* d, const void* s, std::size_t n) override { std::memmove(d, s, n); }
  void synchronize() override {}
};

}  // namespace cohort::testing
