// The host device: memory from the C heap, copies as memmove, and the registry's entry. Its op
// table is op_table.cpp.
#include "host_device.hpp"

#include <cstdlib>
#include <cstring>

#include "cohort/core/error.hpp"
#include "onednn.hpp"

namespace cohort::host {

HostDevice::HostDevice() {
  ensure_kokkos();
  configure_threads();
}

namespace {
std::size_t rounded(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

void* HostDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(64, rounded(bytes));
  COHORT_CHECK_IN("host", p != nullptr, "out of host memory allocating ", bytes, " bytes");
  allocs_.fetch_add(1, std::memory_order_relaxed);
  const std::size_t now = in_use_.fetch_add(rounded(bytes), std::memory_order_relaxed) + rounded(bytes);
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void HostDevice::deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  std::free(p);
  frees_.fetch_add(1, std::memory_order_relaxed);
  in_use_.fetch_sub(rounded(bytes), std::memory_order_relaxed);
}

MemoryStats HostDevice::memory_stats() const {
  MemoryStats s;
  s.allocs = s.raw_allocs = allocs_.load(std::memory_order_relaxed);
  s.frees = s.raw_frees = frees_.load(std::memory_order_relaxed);
  s.bytes_in_use = s.bytes_reserved = in_use_.load(std::memory_order_relaxed);
  s.peak_in_use = s.peak_reserved = peak_.load(std::memory_order_relaxed);
  return s;
}

void HostDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
void HostDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
void HostDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

DeviceFactory factory() {
  DeviceFactory f;
  f.name = "host";
  f.score = 0;
  f.count = [](std::string*) { return 1; };
  f.get = [](int) -> Device& {
    static HostDevice* device = new HostDevice();  // never destroyed: tensors in statics outlive it
    return *device;
  };
  return f;
}

bool bf16_supported(std::string* why) {
  const bool ok = bf16_native();
  if (!ok && why != nullptr) *why = bf16_missing_reason();
  return ok;
}

}  // namespace cohort::host
