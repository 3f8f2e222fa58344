// The host device: ordinary memory, every op run with Kokkos on the host execution space that
// Debian's Kokkos ships (Serial), GEMM through oneDNN's sgemm. Internal header: nothing outside
// backends/ includes it, and it names no Kokkos or oneDNN type.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "cohort/backend/op_list.hpp"
#include "cohort/backend/routes.hpp"
#include "cohort/core/device.hpp"
#include "cohort/devices.hpp"

namespace cohort::memory {
class RawMemory;
class CachingAllocator;
}  // namespace cohort::memory

namespace cohort::host {

class HostDevice final : public Device {
 public:
  HostDevice();
  ~HostDevice() override;

  std::string name() const override { return "host"; }
  DeviceType type() const override { return DeviceType::host; }
  bool host_accessible() const override { return true; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override {}
  // Blocks come from the C heap through the shared caching allocator
  // (backends/common/caching_allocator.hpp), as on the GPU: a training step allocates the same
  // tensors every step, and glibc serves large ones with fresh mmap'd pages (or trims them back)
  // each time, whose page faults and zeroing cost the MNIST CNN a tenth of its step in kernel
  // time. COHORT_HOST_CACHE=off (read when the device is created) makes every allocation a raw
  // aligned_alloc and every free a raw free; so do AddressSanitizer builds by default, whose
  // use-after-free checks a cache would hide. Another value than on or off is an error.
  MemoryStats memory_stats() const override;
  void empty_cache() override;
  void reset_peak_memory_stats() override;
  bool caching() const { return cache_ != nullptr; }

  // Every op through the shared families (backends/common/ops/) with the host executor of
  // op_table.cpp: Kokkos on the host execution space, GEMM and convolutions through oneDNN.
  bool supports(const OpCall& call) const override;
  void run(const OpCall& call) override;

 private:
  std::unique_ptr<memory::RawMemory> heap_;
  std::unique_ptr<memory::CachingAllocator> cache_;  // null: COHORT_HOST_CACHE=off
  std::atomic<std::uint64_t> allocs_{0}, frees_{0};  // without the cache
  std::atomic<std::size_t> in_use_{0}, peak_{0};
  std::atomic<std::size_t> requested_{0}, requested_peak_{0};  // before rounding
  std::size_t limit_ = 0;  // COHORT_HOST_MEMORY_LIMIT in bytes; 0: none
};

// The registry's entry for this backend.
DeviceFactory factory();

// Where each op runs on this backend (op_table.cpp, next to the routing itself).
DeviceRoutes op_routes();

// Initialises Kokkos on first use unless the program already did; finalises it at exit only if
// cohort initialised it (a program that initialised Kokkos itself keeps ownership).
void ensure_kokkos();

// Sets the host GEMM's OpenMP thread count once per process (the rules are in host_threads.cpp)
// and returns it with the reason, as cohort::host_threads() reports it.
const HostThreads& configure_threads();
// cohort::set_host_threads: the count from now on, the governor off (thread_governor.hpp).
void set_threads(int threads);

// Whether the host computes bf16 natively (onednn.hpp's bf16_native), without oneDNN types: what
// cohort::host_bf16_supported reports. `why` gets the reason when not.
bool bf16_supported(std::string* why);

}  // namespace cohort::host
