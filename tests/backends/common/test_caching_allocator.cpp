// The caching allocator (backends/common/caching_allocator.hpp) against a fake driver that counts
// its calls: freed blocks are reused without a driver call, sizes round as documented, a repeated
// training-step pattern stops calling the driver after its first repetition, running out of memory
// releases the cache (after a synchronisation) and retries, and a real failure is an error naming
// the op, the bytes asked and the bytes free. Also the Device defaults for memory statistics,
// pinned memory and asynchronous uploads.
#include <doctest/doctest.h>

#include "common/testing.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "common/caching_allocator.hpp"

using cohort::MemoryStats;
using cohort::memory::CachingAllocator;
using cohort::memory::OpLabel;
using cohort::testing::error_of;

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// A driver with `capacity` bytes that records every call in order.
class FakeRaw final : public cohort::memory::RawMemory {
 public:
  explicit FakeRaw(std::size_t capacity = std::size_t{1} << 40) : capacity(capacity) {}
  ~FakeRaw() override {
    for (const auto& [p, bytes] : blocks) std::free(p);
  }
  void* raw_alloc(std::size_t bytes) override {
    if (used + bytes > capacity) {
      log.push_back("oom");
      return nullptr;
    }
    void* p = std::aligned_alloc(256, bytes);
    REQUIRE(p != nullptr);
    blocks[p] = bytes;
    used += bytes;
    ++allocs;
    log.push_back("alloc");
    return p;
  }
  void raw_free(void* p, std::size_t bytes) noexcept override {
    const auto it = blocks.find(p);
    bad_frees += it == blocks.end() || it->second != bytes;
    if (it != blocks.end()) blocks.erase(it);
    std::free(p);
    used -= bytes;
    ++frees;
    log.push_back("free");
  }
  void synchronize() override {
    ++syncs;
    log.push_back("sync");
  }
  bool device_memory(std::size_t* free_bytes, std::size_t* total) noexcept override {
    *free_bytes = capacity - used;
    *total = capacity;
    return true;
  }
  std::string device_name() const override { return "fake:0"; }
  const char* backend() const override { return "fake"; }

  std::size_t capacity, used = 0;
  int allocs = 0, frees = 0, syncs = 0, bad_frees = 0;
  std::map<void*, std::size_t> blocks;
  std::vector<std::string> log;
};

// The invariants every state of the allocator keeps, given the blocks its user holds.
void check_consistent(const CachingAllocator& a, const FakeRaw& raw,
                      const std::map<void*, std::size_t>& live) {
  const MemoryStats s = a.stats();
  std::size_t in_use = 0, requested = 0;
  for (const auto& [p, bytes] : live) {
    in_use += CachingAllocator::round_size(bytes);
    requested += bytes;
  }
  CHECK(s.bytes_in_use == in_use);
  CHECK(s.bytes_requested == requested);  // before rounding: what the user asked for
  CHECK(s.peak_requested >= s.bytes_requested);
  CHECK(s.bytes_reserved == raw.used);  // every reserved byte came from the driver
  CHECK(s.bytes_reserved == s.bytes_in_use + a.bytes_cached());
  CHECK(s.allocs - s.frees == live.size());
  CHECK(s.raw_allocs == static_cast<std::uint64_t>(raw.allocs));
  CHECK(s.raw_frees == static_cast<std::uint64_t>(raw.frees));
  CHECK(s.allocs == s.raw_allocs + s.cache_hits);
  CHECK(s.peak_in_use >= s.bytes_in_use);
  CHECK(s.peak_reserved >= s.bytes_reserved);
  CHECK(raw.bad_frees == 0);
}

}  // namespace

TEST_CASE("caching allocator: sizes round to 512 B up to 1 MiB, then to 1/8 octave (<= 2 MiB)") {
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(MiB) == MiB);
  CHECK(CachingAllocator::round_size(MiB + 1) == MiB + 128 * KiB);
  CHECK(CachingAllocator::round_size(3 * MiB) == 3 * MiB);
  CHECK(CachingAllocator::round_size(3 * MiB + 1) == 3 * MiB + 256 * KiB);
  CHECK(CachingAllocator::round_size(17 * MiB) == 18 * MiB);
  CHECK(CachingAllocator::round_size(100 * MiB + 1) == 102 * MiB);
  CHECK(CachingAllocator::round_size(std::size_t{5} << 30) == std::size_t{5} << 30);
  // Never less than asked, never more than 1/8 (or 511 bytes) over.
  for (std::size_t n = 1; n < (std::size_t{64} << 20); n = n * 17 / 16 + 1) {
    const std::size_t r = CachingAllocator::round_size(n);
    REQUIRE(r >= n);
    REQUIRE((r - n < 512 || (r - n) * 8 <= r));
    REQUIRE(r % 512 == 0);
  }
}

TEST_CASE("caching allocator: a freed block is reused by the next request of its size class") {
  FakeRaw raw;
  CachingAllocator a(raw);
  CHECK(a.allocate(0) == nullptr);
  void* p = a.allocate(1000);
  REQUIRE(p != nullptr);
  a.deallocate(p);
  CHECK(raw.frees == 0);  // cached, not returned
  CHECK(a.bytes_cached() == 1024);
  void* q = a.allocate(700);  // same 1024-byte class
  CHECK(q == p);
  CHECK(raw.allocs == 1);
  CHECK(a.stats().cache_hits == 1);
  void* r = a.allocate(2000);  // another class: a new block
  CHECK(r != p);
  CHECK(raw.allocs == 2);
  check_consistent(a, raw, {{q, 700}, {r, 2000}});
  a.deallocate(q);
  a.deallocate(r);
  a.deallocate(nullptr);                      // ignored
  a.deallocate(reinterpret_cast<void*>(64));  // not ours: ignored
  check_consistent(a, raw, {});
  CHECK(raw.syncs == 0);  // the normal path never waits for the stream
  a.empty_cache();
  CHECK(raw.log == std::vector<std::string>{"alloc", "alloc", "sync", "free", "free"});
  CHECK(raw.used == 0);
  CHECK(a.stats().cache_flushes == 1);
  check_consistent(a, raw, {});
}

// Benchmark mode's timing workspace (GPU review 2, H5): released to the driver after the stream,
// so the bytes reserved come back to what they were, while the ordinary blocks stay cached.
TEST_CASE("caching allocator: release() gives a block to the driver after a sync, not the cache") {
  FakeRaw raw;
  CachingAllocator a(raw);
  void* act = a.allocate(3 * MiB);  // an activation: cached when freed
  a.deallocate(act);
  const MemoryStats before = a.stats();
  raw.log.clear();
  void* ws = a.allocate(700 * MiB);   // Find's workspace: a class nothing else asks for
  void* out = a.allocate(3 * MiB);    // Find's scratch output: reuses the cached block
  CHECK(out == act);
  CHECK(a.stats().bytes_reserved == before.bytes_reserved + CachingAllocator::round_size(700 * MiB));
  check_consistent(a, raw, {{ws, 700 * MiB}, {out, 3 * MiB}});
  a.release(ws);
  a.deallocate(out);
  // The stream is waited for before the driver frees (queued timing kernels may still use it).
  CHECK(raw.log == std::vector<std::string>{"alloc", "sync", "free"});
  CHECK(a.stats().bytes_reserved == before.bytes_reserved);  // the workspace did not stay
  CHECK(a.bytes_cached() == CachingAllocator::round_size(3 * MiB));
  check_consistent(a, raw, {});
  // Bad input is ignored, as in deallocate(): nullptr, a pointer not ours, a block freed already.
  a.release(nullptr);
  a.release(reinterpret_cast<void*>(64));
  a.release(ws);
  CHECK(raw.log.size() == 3);
  check_consistent(a, raw, {});
  // A released size class is allocated anew next time (nothing of it was cached).
  void* again = a.allocate(700 * MiB);
  CHECK(raw.allocs == 3);
  a.release(again);
  CHECK(raw.used == CachingAllocator::round_size(3 * MiB));
  check_consistent(a, raw, {});
}

TEST_CASE("caching allocator: a repeated training step calls the driver only in its first pass") {
  // A step's pattern: parameters live throughout; activations allocated in forward, freed in
  // backward in reverse order; gradients and scratch interleaved; sizes of many classes.
  FakeRaw raw;
  CachingAllocator a(raw);
  std::map<void*, std::size_t> live;
  auto alloc = [&](std::size_t n) {
    void* p = a.allocate(n);
    live[p] = n;
    return p;
  };
  auto release = [&](void* p) {
    a.deallocate(p);
    live.erase(p);
  };
  std::vector<void*> params;
  for (std::size_t n : {1152u, 128u, 73728u, 256u, 4718592u, 512u, 5120u, 40u})
    params.push_back(alloc(n));
  const std::vector<std::size_t> acts = {200704, 5537792, 5537792, 11075584, 11075584, 2768896,
                                         2768896, 2359296, 32768, 32768, 2560, 2560, 8, 8};
  std::vector<std::uint64_t> raw_allocs;
  for (int step = 0; step < 6; ++step) {
    std::vector<void*> saved;
    for (std::size_t n : acts) {
      void* scratch = alloc(n / 3 + 1);  // an op's scratch, freed when the op returns
      saved.push_back(alloc(n));
      release(scratch);
    }
    std::vector<void*> grads;
    while (!saved.empty()) {  // backward: gradients appear, activations go
      grads.push_back(alloc(4096 + saved.size()));
      release(saved.back());
      saved.pop_back();
    }
    for (void* g : grads) release(g);
    check_consistent(a, raw, live);
    raw_allocs.push_back(a.stats().raw_allocs);
  }
  for (int step = 1; step < 6; ++step) CHECK(raw_allocs[step] == raw_allocs[0]);
  CHECK(raw.frees == 0);
  CHECK(raw.syncs == 0);
  const MemoryStats s = a.stats();
  CHECK(s.cache_hits == s.allocs - s.raw_allocs);
  CHECK(s.cache_hits >= 5 * (2 * acts.size() + acts.size()));  // every later step from the cache
  for (void* p : params) release(p);
  check_consistent(a, raw, live);
}

TEST_CASE("caching allocator: out of memory releases the cache after a sync and retries once") {
  FakeRaw raw(4 * MiB);
  CachingAllocator a(raw);
  void* p = a.allocate(3 * MiB);
  a.deallocate(p);  // 3 MiB cached
  raw.log.clear();
  void* q = a.allocate(2 * MiB);  // another class; fits only once the cache is returned
  REQUIRE(q != nullptr);
  CHECK(raw.log == std::vector<std::string>{"oom", "sync", "free", "alloc"});
  const MemoryStats s = a.stats();
  CHECK(s.cache_flushes == 1);
  CHECK(s.raw_frees == 1);
  CHECK(a.bytes_cached() == 0);
  check_consistent(a, raw, {{q, 2 * MiB}});
  a.deallocate(q);
}

TEST_CASE("caching allocator: real out of memory names the op, the bytes asked and the bytes free") {
  FakeRaw raw(4 * MiB);
  CachingAllocator a(raw);
  void* held = a.allocate(MiB);
  void* cached = a.allocate(512 * KiB);
  a.deallocate(cached);
  const std::string outside = error_of([&] { a.allocate(5 * MiB); });
  CHECK_MESSAGE(outside.find("out of memory on fake:0 in tensor allocation: asked for 5242880 "
                             "bytes (5242880 rounded); 3145728 of 4194304 bytes free on the "
                             "device; this allocator holds 1048576 bytes in use and had 524288 "
                             "bytes cached (released before the retry)") != std::string::npos,
                outside);
  CHECK(a.bytes_cached() == 0);  // released on the way
  check_consistent(a, raw, {{held, MiB}});
  std::string inside;
  {
    const OpLabel label("conv2d_forward");
    inside = error_of([&] { a.allocate(4 * MiB + 1); });
    {
      const OpLabel nested("gemm");
      CHECK(error_of([&] { a.allocate(8 * MiB); }).find(" in gemm: ") != std::string::npos);
    }
    CHECK(error_of([&] { a.allocate(8 * MiB); }).find(" in conv2d_forward: ") != std::string::npos);
  }
  CHECK_MESSAGE(inside.find("out of memory on fake:0 in conv2d_forward: asked for 4194305 bytes "
                            "(4718592 rounded); 3145728 of 4194304 bytes free on the device; this "
                            "allocator holds 1048576 bytes in use and had 0 bytes cached "
                            "(released before the retry)") != std::string::npos,
                inside);
  CHECK(error_of([&] { a.allocate(8 * MiB); }).find(" in tensor allocation: ") != std::string::npos);
  // The failures changed nothing: the allocator still works.
  void* ok = a.allocate(MiB);
  REQUIRE(ok != nullptr);
  check_consistent(a, raw, {{held, MiB}, {ok, MiB}});
  a.deallocate(ok);
  a.deallocate(held);
}

TEST_CASE("caching allocator: statistics stay consistent under two threads") {
  FakeRaw raw;
  CachingAllocator a(raw);
  auto work = [&](unsigned seed) {
    std::vector<void*> mine;
    unsigned x = seed;
    for (int i = 0; i < 20000; ++i) {
      x = x * 1664525u + 1013904223u;
      if (mine.size() < 8 && (x >> 28) < 10) {
        mine.push_back(a.allocate(512 * ((x >> 8) % 64 + 1)));
      } else if (!mine.empty()) {
        a.deallocate(mine.back());
        mine.pop_back();
      }
    }
    for (void* p : mine) a.deallocate(p);
  };
  std::thread t1(work, 1u), t2(work, 2u);
  t1.join();
  t2.join();
  check_consistent(a, raw, {});
  CHECK(a.stats().cache_hits > 0);
}

namespace {
// A device with nothing but the required members: memory_stats(), empty_cache(), pinned memory
// and asynchronous uploads use the Device defaults.
class PlainDevice final : public cohort::Device {
 public:
  std::string name() const override { return "plain"; }
  cohort::DeviceType type() const override { return cohort::DeviceType::host; }
  bool host_accessible() const override { return true; }
  void* allocate(std::size_t n) override { return cohort::host_device().allocate(n); }
  void deallocate(void* p, std::size_t n) noexcept override {
    cohort::host_device().deallocate(p, n);
  }
  void copy_from_host(void* d, const void* s, std::size_t n) override {
    ++uploads;
    std::memcpy(d, s, n);
  }
  void copy_to_host(void* d, const void* s, std::size_t n) override { std::memcpy(d, s, n); }
  void copy(void* d, const void* s, std::size_t n) override { std::memcpy(d, s, n); }
  void synchronize() override {}
  bool supports(const cohort::OpCall&) const override { return false; }
  void run(const cohort::OpCall&) override {}
  int uploads = 0;
};
}  // namespace

TEST_CASE("Device defaults: zero statistics, heap staging memory, a synchronous upload") {
  PlainDevice d;
  const MemoryStats s = d.memory_stats();
  CHECK(s.allocs == 0);
  CHECK(s.raw_allocs == 0);
  CHECK(s.bytes_reserved == 0);
  d.empty_cache();  // nothing to do
  CHECK(d.allocate_pinned(0) == nullptr);
  auto* pinned = static_cast<float*>(d.allocate_pinned(3 * sizeof(float)));
  REQUIRE(pinned != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(pinned) % 64 == 0);
  pinned[0] = 1.5f;
  pinned[1] = 2.5f;
  pinned[2] = -1.0f;
  float dst[3] = {};
  d.copy_from_host_async(dst, pinned, sizeof dst, nullptr);  // complete on return
  CHECK(d.uploads == 1);
  CHECK(dst[1] == 2.5f);
  d.deallocate_pinned(pinned, 3 * sizeof(float));
  d.deallocate_pinned(nullptr, 0);
}

TEST_CASE("host device statistics: blocks in the allocator's classes, raw ones rounded to 64") {
  // The host device caches through CachingAllocator unless COHORT_HOST_CACHE=off, and not by
  // default under AddressSanitizer (test_host_memory.cpp checks reuse itself).
  const char* env = std::getenv("COHORT_HOST_CACHE");
#if defined(__SANITIZE_ADDRESS__)
  const bool caching = env != nullptr && std::string(env) == "on";
#else
  const bool caching = env == nullptr || std::string(env) != "off";
#endif
  auto& host = cohort::host_device();
  const MemoryStats before = host.memory_stats();
  {
    cohort::Tensor t = cohort::Tensor::empty({10}, cohort::DType::f32, host);  // 40 bytes
    const MemoryStats during = host.memory_stats();
    CHECK(during.allocs == before.allocs + 1);
    CHECK(during.bytes_in_use == before.bytes_in_use + (caching ? 512 : 64));
    CHECK(during.bytes_requested == before.bytes_requested + 40);
    if (!caching) {
      CHECK(during.raw_allocs == during.allocs);
      CHECK(during.bytes_reserved == during.bytes_in_use);
      CHECK(during.cache_hits == 0);
    }
    CHECK(during.bytes_reserved >= during.bytes_in_use);
    CHECK(during.peak_in_use >= during.bytes_in_use);
    CHECK(during.host_waits == 0);
  }
  const MemoryStats after = host.memory_stats();
  CHECK(after.frees == before.frees + 1);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.bytes_requested == before.bytes_requested);
}

TEST_CASE("reset_peak_memory_stats: the peak starts again from what is in use") {
  auto& host = cohort::host_device();
  cohort::Tensor keep = cohort::Tensor::empty({1000}, cohort::DType::f32, host);
  {
    cohort::Tensor big = cohort::Tensor::empty({1 << 20}, cohort::DType::f32, host);  // 4 MiB
    CHECK(host.memory_stats().peak_in_use >= host.memory_stats().bytes_in_use);
  }
  const std::size_t in_use = host.memory_stats().bytes_in_use;
  CHECK(host.memory_stats().peak_in_use >= in_use + (std::size_t{4} << 20));
  host.reset_peak_memory_stats();
  CHECK(host.memory_stats().peak_in_use == in_use);
  {
    cohort::Tensor t = cohort::Tensor::empty({1 << 18}, cohort::DType::f32, host);  // 1 MiB
  }
  const MemoryStats s = host.memory_stats();
  CHECK(s.peak_in_use >= in_use + (std::size_t{1} << 20));
  CHECK(s.peak_in_use < in_use + (std::size_t{4} << 20));
  CHECK(s.peak_reserved >= s.bytes_reserved);
}
