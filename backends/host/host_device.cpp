// The host device: memory from the C heap (through the shared caching allocator unless
// COHORT_HOST_CACHE=off), copies as memmove, and the registry's entry. Its op table is
// op_table.cpp. COHORT_HOST_MEMORY_LIMIT caps the bytes taken from the heap, as a GPU's memory
// caps the CUDA device (torch.cuda.set_per_process_memory_fraction): past it an allocation fails
// with the allocator's out-of-memory error.
#include "host_device.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cohort/core/error.hpp"
#include "common/caching_allocator.hpp"
#include "onednn.hpp"

namespace cohort::host {
namespace {

std::size_t rounded(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

// COHORT_HOST_MEMORY_LIMIT: bytes, or a number with K, M or G (KiB, MiB, GiB: "512M", "1.5G");
// unset or empty: no limit (0).
std::size_t memory_limit() {
  const char* v = std::getenv("COHORT_HOST_MEMORY_LIMIT");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  double unit = 1;
  if (end != v && *end != '\0' && end[1] == '\0') {
    const char c = *end++;
    unit = c == 'K' || c == 'k'   ? 1024.0
           : c == 'M' || c == 'm' ? 1048576.0
           : c == 'G' || c == 'g' ? 1073741824.0
                                  : 0;
  }
  COHORT_CHECK_IN("host", end != v && *end == '\0' && unit > 0 && x * unit >= 1,
                  "COHORT_HOST_MEMORY_LIMIT='", v,
                  "' is not a memory size: give bytes or a "
                  "number with K, M or G (KiB, MiB, GiB), as 512M or 1.5G");
  return static_cast<std::size_t>(x * unit);
}

// The C heap as the caching allocator's driver. The allocator's classes are multiples of 512
// bytes, so aligned_alloc's size rule (a multiple of the alignment) holds.
// With a limit, taking more than it from the heap reports out of memory (nullptr), and the
// allocator's free and total are the limit's.
class HeapMemory final : public ::cohort::memory::RawMemory {
 public:
  explicit HeapMemory(std::size_t limit) : limit_(limit) {}
  void* raw_alloc(std::size_t bytes) override {
    if (limit_ && taken_ + bytes > limit_) return nullptr;
    void* p = std::aligned_alloc(256, bytes);
    if (p) taken_ += bytes;
    return p;
  }
  void raw_free(void* p, std::size_t bytes) noexcept override {
    std::free(p);
    taken_ -= bytes;
  }
  void synchronize() override {}  // host ops have finished when they return
  bool device_memory(std::size_t* free_bytes, std::size_t* total_bytes) noexcept override {
    if (limit_) {
      *free_bytes = limit_ - taken_;
      *total_bytes = limit_;
      return true;
    }
    const long page = ::sysconf(_SC_PAGESIZE), avail = ::sysconf(_SC_AVPHYS_PAGES),
               phys = ::sysconf(_SC_PHYS_PAGES);
    if (page <= 0 || avail < 0 || phys <= 0) return false;
    *free_bytes = static_cast<std::size_t>(avail) * static_cast<std::size_t>(page);
    *total_bytes = static_cast<std::size_t>(phys) * static_cast<std::size_t>(page);
    return true;
  }
  std::string device_name() const override {
    return limit_ ? "host (limited to " + std::to_string(limit_) +
                        " bytes by COHORT_HOST_MEMORY_LIMIT)"
                  : std::string("host");
  }
  const char* backend() const override { return "host"; }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> taken_{0};  // the caching allocator calls under its mutex; atomic anyway
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheByDefault = false;  // AddressSanitizer's use-after-free checks need raw frees
#else
constexpr bool kCacheByDefault = true;
#endif

// COHORT_HOST_CACHE: on or off; unset: on (off under AddressSanitizer).
bool cache_wanted() {
  const char* v = std::getenv("COHORT_HOST_CACHE");
  if (v == nullptr || *v == '\0') return kCacheByDefault;
  if (std::strcmp(v, "on") == 0) return true;
  COHORT_CHECK_IN("host", std::strcmp(v, "off") == 0, "COHORT_HOST_CACHE='", v,
                  "' is not a host allocator setting: use on (the default) or off");
  return false;
}

}  // namespace

HostDevice::HostDevice() {
  ensure_kokkos();
  configure_threads();
  limit_ = memory_limit();
  if (cache_wanted()) {
    heap_ = std::make_unique<HeapMemory>(limit_);
    cache_ = std::make_unique<::cohort::memory::CachingAllocator>(*heap_);
  }
}

HostDevice::~HostDevice() = default;

void HostDevice::empty_cache() {
  if (cache_) cache_->empty_cache();
}

void HostDevice::reset_peak_memory_stats() {
  if (cache_) return cache_->reset_peak();
  peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  requested_peak_.store(requested_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void* HostDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (cache_) return cache_->allocate(bytes);
  COHORT_CHECK_IN("host",
                  !limit_ || in_use_.load(std::memory_order_relaxed) + rounded(bytes) <= limit_,
                  "out of memory on host (limited to ", limit_,
                  " bytes by "
                  "COHORT_HOST_MEMORY_LIMIT): asked for ",
                  bytes, " bytes with ", in_use_.load(std::memory_order_relaxed),
                  " in use (COHORT_HOST_CACHE=off)");
  void* p = std::aligned_alloc(64, rounded(bytes));
  COHORT_CHECK_IN("host", p != nullptr, "out of host memory allocating ", bytes, " bytes");
  allocs_.fetch_add(1, std::memory_order_relaxed);
  const auto raise = [](std::atomic<std::size_t>& peak_of, std::size_t now) {
    std::size_t peak = peak_of.load(std::memory_order_relaxed);
    while (now > peak && !peak_of.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  };
  raise(peak_, in_use_.fetch_add(rounded(bytes), std::memory_order_relaxed) + rounded(bytes));
  raise(requested_peak_, requested_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  return p;
}

void HostDevice::deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (cache_) return cache_->deallocate(p);
  std::free(p);
  frees_.fetch_add(1, std::memory_order_relaxed);
  in_use_.fetch_sub(rounded(bytes), std::memory_order_relaxed);
  requested_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryStats HostDevice::memory_stats() const {
  if (cache_) return cache_->stats();
  MemoryStats s;
  s.allocs = s.raw_allocs = allocs_.load(std::memory_order_relaxed);
  s.frees = s.raw_frees = frees_.load(std::memory_order_relaxed);
  s.bytes_in_use = s.bytes_reserved = in_use_.load(std::memory_order_relaxed);
  s.peak_in_use = s.peak_reserved = peak_.load(std::memory_order_relaxed);
  s.bytes_requested = requested_.load(std::memory_order_relaxed);
  s.peak_requested = requested_peak_.load(std::memory_order_relaxed);
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
