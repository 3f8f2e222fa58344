// The host device: memory from the C heap, copies as memmove, and the registry's entry. Its op
// table is host_ops.cpp.
#include "host_device.hpp"

#include <cstdlib>
#include <cstring>

#include "cohort/core/error.hpp"

namespace cohort::host {

HostDevice::HostDevice() {
  ensure_kokkos();
  configure_threads();
}

void* HostDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  COHORT_CHECK_IN("host", p != nullptr, "out of host memory allocating ", bytes, " bytes");
  return p;
}

void HostDevice::deallocate(void* p, std::size_t) noexcept { std::free(p); }

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

}  // namespace cohort::host
