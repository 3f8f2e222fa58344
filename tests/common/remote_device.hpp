// A device the host may not address (host_accessible() is false) that is host memory underneath
// and runs every op on the host device. It drives the code written for GPUs (the DataLoader's
// pinned staging, the Trainer's deferred loss readback, the loss ops' skipped target readback) on
// CPU-only CI, and counts the calls those paths make: readbacks, blocking and asynchronous uploads,
// pinned buffers. Its streams and events are the synchronous defaults, so ordering is trivially
// right here; what it checks is which calls are made, and how often.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "host_backed_device.hpp"

namespace cohort::testing {

class RemoteDevice final : public HostBackedDevice {
 public:
  RemoteDevice() : HostBackedDevice("remote") {}
  void synchronize() override { ++syncs; }

  void* allocate_pinned(std::size_t bytes) override {
    ++pinned_allocs;
    void* p = Device::allocate_pinned(bytes);
    std::lock_guard<std::mutex> lock(mu);
    pinned_blocks.emplace_back(static_cast<const char*>(p), bytes);
    return p;
  }
  void deallocate_pinned(void* p, std::size_t bytes) noexcept override {
    if (p) ++pinned_frees;
    Device::deallocate_pinned(p, bytes);
  }
  void copy_from_host_async(void* d, const void* s, std::size_t n, void* stream) override {
    ++async_uploads;
    if (stream == nullptr) ++async_on_compute;
    {
      std::lock_guard<std::mutex> lock(mu);
      sources.insert(s);
    }
    std::memmove(d, s, n);
  }

  // Sets every counter to 0.
  void reset() {
    readbacks = blocking_uploads = syncs = pinned_allocs = pinned_frees = async_uploads =
        async_on_compute = 0;
    std::lock_guard<std::mutex> lock(mu);
    sources.clear();
    pinned_blocks.clear();
  }
  // Whether every asynchronous upload since reset() read from memory of allocate_pinned().
  bool uploads_from_pinned() {
    std::lock_guard<std::mutex> lock(mu);
    for (const void* s : sources) {
      bool inside = false;
      for (const auto& [p, n] : pinned_blocks)
        inside |= static_cast<const char*>(s) >= p && static_cast<const char*>(s) < p + n;
      if (!inside) return false;
    }
    return true;
  }

  std::atomic<int> syncs{0}, pinned_allocs{0}, pinned_frees{0}, async_uploads{0},
      async_on_compute{0};
  std::mutex mu;
  std::set<const void*> sources;  // host addresses copy_from_host_async read from
  std::vector<std::pair<const char*, std::size_t>> pinned_blocks;  // since reset()
};

// One per program, never destroyed (tensors in statics may outlive any destruction order).
inline RemoteDevice& remote_device() {
  static RemoteDevice* d = new RemoteDevice();
  return *d;
}

}  // namespace cohort::testing
