// A caching allocator for device memory, after PyTorch's CUDACachingAllocator but simpler: freed
// blocks go to a free list keyed by their rounded size and later allocations of that size take
// them back, so a training loop that allocates the same tensors every step asks the driver for
// memory only during its first step. The driver's free (cudaFree) synchronises the whole device;
// keeping blocks cached is what keeps it out of the step.
//
// CUDA-free: it is written against RawMemory (the device's own allocator: cudaMalloc / cudaFree
// for the CUDA device, a counting fake in tests/backends/common/test_caching_allocator.cpp), so
// CPU-only CI tests every line of it.
//
// Stream-order contract. Every allocate() and deallocate() of one allocator is ordered on its
// device's single compute stream (Device::allocate / deallocate, cohort/core/device.hpp): a block
// freed while kernels that read it are still queued goes back to the free list at once, and the
// next allocation may hand it out before those kernels ran. That is safe because whatever the new
// owner enqueues goes onto the same stream, after them. Memory used on another stream (a
// communicator's, the data loader's upload stream) must therefore be ordered back onto the compute
// stream before it is freed: record an event on the other stream after its last use and make the
// compute stream wait for it (Stream::compute(dev).wait(event)). The allocator never synchronises
// in the normal path; it waits for the stream (RawMemory::synchronize) only before it returns cached
// blocks to the driver: when the driver is out of memory and when empty_cache() is called.
//
// Sizes. Requests up to 1 MiB are rounded up to a multiple of 512 bytes (PyTorch's minimum block,
// and cudaMalloc's alignment is 256); larger ones to a multiple of 1/8 of their power-of-two
// octave, at most 2 MiB (128 KiB steps between 1 and 2 MiB, 2 MiB steps above 16 MiB). So no
// block wastes more than 1/8 of itself, and sizes that differ by a few bytes share a class.
// A free block is reused only by a request of exactly its class. No splitting or merging: with
// exact classes a repeated pattern of allocations provably stops calling the driver after its
// first repetition (class c never has more blocks than the most that were live at once), which a
// best-fit search that lets a large request take a small one's block does not guarantee. The price
// is fragmentation when sizes keep changing (each new class holds its own blocks); running out of
// memory releases every cached block and retries, so that costs speed, not failures.
//
// Out of memory: release every cached block (after RawMemory::synchronize), retry once, then throw
// cohort::Error naming the device, the op being run (OpLabel below; "tensor allocation" outside
// an op), the bytes asked, the bytes the driver reports free, and this allocator's bytes in use
// and cached.
//
// Thread-safe: one mutex around the free lists and the statistics.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"

namespace cohort::memory {

// What the allocator draws from: the device's driver allocator.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // `bytes` (> 0) of device memory aligned to at least 256 bytes, or nullptr when the device is
  // out of memory. Other failures throw cohort::Error.
  virtual void* raw_alloc(std::size_t bytes) = 0;
  // Returns a block to the driver. Called only after synchronize().
  virtual void raw_free(void* p, std::size_t bytes) noexcept = 0;
  // Blocks until every op enqueued so far on the compute stream has finished (so no queued kernel
  // still reads a cached block).
  virtual void synchronize() = 0;
  // What the driver reports free and total on the device now; false when it cannot say.
  virtual bool device_memory(std::size_t* free_bytes, std::size_t* total_bytes) noexcept = 0;
  virtual std::string device_name() const = 0;  // "cuda:0", for messages
  virtual const char* backend() const = 0;      // "cuda", the cohort::Error attribution
};

// The op this thread is running, for out-of-memory messages: a device sets it for the duration of
// Device::run (OpLabel label(op_name(op))), so scratch allocated inside an op names it; nullptr
// (reported as "tensor allocation") outside any op. Nested labels restore the outer one.
inline thread_local const char* current_op_label = nullptr;

class OpLabel {
 public:
  explicit OpLabel(const char* op) noexcept : saved_(current_op_label) { current_op_label = op; }
  ~OpLabel() { current_op_label = saved_; }
  OpLabel(const OpLabel&) = delete;
  OpLabel& operator=(const OpLabel&) = delete;

 private:
  const char* saved_;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawMemory& raw) : raw_(raw) {}
  // Returns cached blocks to the driver; blocks still allocated are left to their owners.
  ~CachingAllocator() {
    try {
      empty_cache();
    } catch (...) {  // the driver may already be gone at exit
    }
  }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  static constexpr std::size_t kSmall = std::size_t{1} << 20;      // 1 MiB
  static constexpr std::size_t kSmallStep = 512;
  static constexpr std::size_t kLargeStepMax = std::size_t{2} << 20;  // 2 MiB

  // The block size a request of `bytes` (> 0) gets (see the file comment).
  static std::size_t round_size(std::size_t bytes) {
    std::size_t step = kSmallStep;
    if (bytes > kSmall) {
      std::size_t octave = kSmall;  // the largest power of two <= bytes
      while (octave <= bytes / 2) octave *= 2;
      step = std::min(octave / 8, kLargeStepMax);
    }
    return (bytes + step - 1) / step * step;
  }

  // A block of at least `bytes`; nullptr for 0. Throws cohort::Error when the device is out of
  // memory even after the cache was released.
  void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    const std::size_t size = round_size(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    void* p = nullptr;
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();  // the most recently freed: likeliest still in the GPU's L2
      it->second.pop_back();
      cached_ -= size;
      ++stats_.cache_hits;
    } else {
      p = raw_.raw_alloc(size);
      if (p == nullptr) {
        const std::size_t released = release_cached();
        p = raw_.raw_alloc(size);
        if (p == nullptr) throw_out_of_memory(bytes, size, released);
      }
      ++stats_.raw_allocs;
      stats_.bytes_reserved += size;
      stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.bytes_reserved);
    }
    live_.emplace(p, Live{size, bytes});
    ++stats_.allocs;
    stats_.bytes_in_use += size;
    stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.bytes_in_use);
    stats_.bytes_requested += bytes;
    stats_.peak_requested = std::max(stats_.peak_requested, stats_.bytes_requested);
    return p;
  }

  // Back to the free list in stream order (see the file comment); nullptr and pointers this
  // allocator did not hand out are ignored.
  void deallocate(void* p) noexcept {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;
    const std::size_t size = it->second.size;
    stats_.bytes_requested -= it->second.requested;
    live_.erase(it);
    ++stats_.frees;
    stats_.bytes_in_use -= size;
    try {
      free_[size].push_back(p);
      cached_ += size;
    } catch (...) {  // no host memory for the list itself: give the block back instead
      try {
        raw_.synchronize();
      } catch (...) {
      }
      raw_.raw_free(p, size);
      ++stats_.raw_frees;
      stats_.bytes_reserved -= size;
    }
  }

  // Gives a block back to the driver at once instead of to the cache, after the compute stream
  // (the work queued on it may still use the block): for one-off large blocks whose size class
  // nothing else asks for, such as benchmark mode's timing workspace (cuDNN's Find), which
  // PyTorch releases by emptying its whole cache after every Find. Cached, that block would stay
  // reserved for the life of the process, out of reach of another process on the same GPU.
  // nullptr and pointers this allocator did not hand out are ignored, as in deallocate().
  void release(void* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;
    const std::size_t size = it->second.size;
    raw_.synchronize();  // may throw: the block then stays live, its owner's to free again
    stats_.bytes_requested -= it->second.requested;
    live_.erase(it);
    ++stats_.frees;
    stats_.bytes_in_use -= size;
    raw_.raw_free(p, size);
    ++stats_.raw_frees;
    stats_.bytes_reserved -= size;
  }

  // Waits for the compute stream, then returns every cached block to the driver.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached();
  }

  // The peaks start again from what is in use and reserved now.
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_in_use = stats_.bytes_in_use;
    stats_.peak_reserved = stats_.bytes_reserved;
    stats_.peak_requested = stats_.bytes_requested;
  }

  // Allocator counts and bytes (MemoryStats's allocator fields; the rest stay zero).
  MemoryStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  std::size_t bytes_cached() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

 private:
  // Under mu_. Returns the bytes released.
  std::size_t release_cached() {
    if (cached_ == 0) return 0;
    raw_.synchronize();
    std::size_t released = 0;
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) {
        raw_.raw_free(p, size);
        ++stats_.raw_frees;
        released += size;
      }
      blocks.clear();
    }
    free_.clear();
    stats_.bytes_reserved -= released;
    cached_ = 0;
    ++stats_.cache_flushes;
    return released;
  }

  [[noreturn]] void throw_out_of_memory(std::size_t bytes, std::size_t size,
                                        std::size_t released) {
    std::size_t free_bytes = 0, total = 0;
    const bool known = raw_.device_memory(&free_bytes, &total);
    const char* op = current_op_label ? current_op_label : "tensor allocation";
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "raw_alloc(size)", raw_.backend(),
        ::cohort::detail::concat(
            "out of memory on ", raw_.device_name(), " in ", op, ": asked for ", bytes,
            " bytes (", size, " rounded); ",
            known ? ::cohort::detail::concat(free_bytes, " of ", total, " bytes free on the device")
                  : std::string("free bytes unknown"),
            "; this allocator holds ", stats_.bytes_in_use, " bytes in use and had ", released,
            " bytes cached (released before the retry)"));
  }

  RawMemory& raw_;
  mutable std::mutex mu_;
  struct Live {
    std::size_t size;       // the block's (rounded) size
    std::size_t requested;  // what allocate() was asked for
  };
  std::unordered_map<void*, Live> live_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;  // rounded size -> cached blocks
  std::size_t cached_ = 0;                                     // bytes in free_
  MemoryStats stats_;
};

}  // namespace cohort::memory
