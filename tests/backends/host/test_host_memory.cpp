// The host device's memory (backends/host/host_device.hpp): freed blocks go back to the shared
// caching allocator and the next request of their size class takes them (the allocator's own
// rules are test_caching_allocator.cpp's); COHORT_HOST_CACHE=off, and AddressSanitizer builds by
// default, make every allocation and free a raw one; any other value is an error that names the
// variable. The ctest entries unit_host_cache_off and unit_bad_host_cache run these cases with
// the variable set (it is read once, when the process creates the host device).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "common/testing.hpp"

namespace {
const char* cache_env() {
  const char* v = std::getenv("COHORT_HOST_CACHE");
  return v ? v : "";
}
bool bogus_env() { return std::strcmp(cache_env(), "bogus") == 0; }
}  // namespace

TEST_CASE("host memory: freed blocks are reused unless COHORT_HOST_CACHE=off" *
          doctest::skip(bogus_env())) {
#if defined(__SANITIZE_ADDRESS__)
  const bool caching = std::strcmp(cache_env(), "on") == 0;
#else
  const bool caching = std::strcmp(cache_env(), "off") != 0;
#endif
  cohort::Device& dev = cohort::host_device();
  const cohort::MemoryStats before = dev.memory_stats();
  const std::int64_t n = (3 << 20) / 4 + 5;  // 3 MiB and a bit: a large class
  for (int i = 0; i < 4; ++i) {
    cohort::Tensor t = cohort::Tensor::full(cohort::Shape{n}, 1.0 * i, cohort::DType::f32, dev);
    CHECK(t.to_vector<float>()[n - 1] == static_cast<float>(i));
  }
  const cohort::MemoryStats after = dev.memory_stats();
  CHECK(after.allocs - before.allocs >= 4);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  if (caching) {
    CHECK(after.raw_allocs - before.raw_allocs <= 1);  // the first, unless a block was cached
    CHECK(after.cache_hits - before.cache_hits >= 3);
    CHECK(after.bytes_reserved > after.bytes_in_use);  // the block is kept
    dev.empty_cache();
    const cohort::MemoryStats emptied = dev.memory_stats();
    CHECK(emptied.bytes_reserved == emptied.bytes_in_use);
    CHECK(emptied.cache_flushes == after.cache_flushes + 1);
  } else {
    CHECK(after.raw_allocs - before.raw_allocs == after.allocs - before.allocs);
    CHECK(after.cache_hits == 0);
    CHECK(after.bytes_reserved == after.bytes_in_use);
  }
}

TEST_CASE("host memory: a COHORT_HOST_CACHE that is neither on nor off is an error naming it" *
          doctest::skip(!bogus_env())) {
  const std::string e = cohort::testing::error_of([] { cohort::host_device(); });
  CHECK_MESSAGE(e.find("COHORT_HOST_CACHE='bogus' is not a host allocator setting: use on (the "
                       "default) or off") != std::string::npos,
                e);
}
