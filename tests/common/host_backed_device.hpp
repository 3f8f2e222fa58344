// What the test devices have in common (remote_device.hpp, lazy_stream_device.hpp): a device the
// host may not address (host_accessible() is false) that is host memory underneath and runs every
// op on the host device, so that the code written for GPUs runs on CPU-only CI. It counts the
// blocking transfers; the subclasses add what they check.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "cohort/core/device.hpp"
#include "cohort/devices.hpp"

namespace cohort::testing {

class HostBackedDevice : public Device {
 public:
  explicit HostBackedDevice(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  DeviceType type() const override { return DeviceType::host; }
  bool host_accessible() const override { return false; }
  // 256-byte aligned, as cudaMalloc and the CUDA device's caching allocator are.
  void* allocate(std::size_t bytes) override {
    return bytes ? std::aligned_alloc(256, (bytes + 255) / 256 * 256) : nullptr;
  }
  void deallocate(void* p, std::size_t) noexcept override { std::free(p); }
  void copy_from_host(void* d, const void* s, std::size_t n) override {
    ++blocking_uploads;
    std::memmove(d, s, n);
  }
  void copy_to_host(void* d, const void* s, std::size_t n) override {
    ++readbacks;
    std::memmove(d, s, n);
  }
  void copy(void* d, const void* s, std::size_t n) override { std::memmove(d, s, n); }

  bool supports(const OpCall&) const override { return true; }
  void run(const OpCall& call) override { host_device().run(call); }  // host pointers underneath

  std::atomic<int> readbacks{0}, blocking_uploads{0};  // copy_to_host / copy_from_host calls

 private:
  std::string name_;
};

}  // namespace cohort::testing
