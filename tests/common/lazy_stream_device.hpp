// A device the host may not address whose side streams really are asynchronous: work enqueued on
// a stream made by create_stream() (copies, waits) is queued and runs only when something waits
// for it: at most one item per query_event() call (on about half of the calls, pseudo-randomly,
// so streams finish in orders of their own), all of it on synchronize_event()/synchronize_stream().
// The compute stream (nullptr) runs at once, as ops and blocking copies do. Host memory
// underneath; every op runs on the host device.
//
// Why: RemoteDevice (remote_device.hpp) is synchronous, so code that forgets an event on a GPU
// (reads a host buffer before the download into it landed, overwrites memory a queued copy still
// reads, starts a collective too early) still passes there. Here such code reads stale bytes and
// the results change, on CPU-only CI. It also counts blocking transfers and checks that every
// asynchronous copy's host side is page-locked (allocate_pinned or register_host_memory), and
// counts how often the host waited for the compute stream.
// Stream and event semantics follow CUDA's: a blocking copy or synchronize() waits for the
// compute stream only, never for side streams.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>

#include "host_backed_device.hpp"

namespace cohort::testing {

class LazyStreamDevice final : public HostBackedDevice {
 public:
  LazyStreamDevice() : HostBackedDevice("lazy") {}
  void* allocate(std::size_t bytes) override {
    void* p = HostBackedDevice::allocate(bytes);
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (p) allocs_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      allocs_.erase(static_cast<const char*>(p));
    }
    HostBackedDevice::deallocate(p, bytes);
  }
  // Whether [p, p + n) lies in one live allocation of this device ("device memory").
  bool owns(const void* p, std::size_t n) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return inside(allocs_, p, n);
  }
  void synchronize() override { ++compute_waits; }  // the compute stream is always finished

  void* allocate_pinned(std::size_t bytes) override {
    void* p = Device::allocate_pinned(bytes);
    std::lock_guard<std::recursive_mutex> lock(mu_);
    locked_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void deallocate_pinned(void* p, std::size_t bytes) noexcept override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      locked_.erase(static_cast<const char*>(p));
    }
    Device::deallocate_pinned(p, bytes);
  }
  bool register_host_memory(void* p, std::size_t bytes) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++registrations;
    locked_[static_cast<const char*>(p)] = bytes;
    return true;
  }
  void unregister_host_memory(void* p) noexcept override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++unregistrations;
    locked_.erase(static_cast<const char*>(p));
  }

  void copy_from_host_async(void* d, const void* s, std::size_t n, void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++async_uploads;
    check_locked(s, n);
    enqueue(stream, [d, s, n] { std::memmove(d, s, n); });
  }
  void copy_to_host_async(void* d, const void* s, std::size_t n, void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++async_downloads;
    check_locked(d, n);
    enqueue(stream, [d, s, n] { std::memmove(d, s, n); });
  }

  void* create_stream() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++streams_alive;
    return new Queue();
  }
  void destroy_stream(void* stream) noexcept override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto* q = static_cast<Queue*>(stream);
    run_until(q, q->enqueued);  // as cudaStreamDestroy: queued work still runs
    delete q;
    --streams_alive;
  }
  void* create_event() override { return new Mark(); }
  void destroy_event(void* event) noexcept override { delete static_cast<Mark*>(event); }
  void record_event(void* event, void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto* q = static_cast<Queue*>(stream);
    *static_cast<Mark*>(event) = Mark{q, q ? q->enqueued : 0};
  }
  void stream_wait_event(void* stream, void* event) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    const Mark m = *static_cast<Mark*>(event);  // the point recorded now, as CUDA takes it
    if (stream == nullptr) {
      run_until(m.q, m.target);  // the compute stream runs at once: it waits right here
      return;
    }
    enqueue(stream, [this, m] { run_until(m.q, m.target); });
  }
  bool query_event(void* event) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    const Mark& m = *static_cast<Mark*>(event);
    if (m.q == nullptr || m.q->done >= m.target) return true;
    // At most one item per query, and only on about half of them (a fixed pseudo-random
    // sequence, different per rank): streams finish in an order of their own, as on a GPU.
    if (next_coin()) run_until(m.q, m.q->done + 1);
    return m.q->done >= m.target;
  }
  void synchronize_event(void* event) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    const Mark& m = *static_cast<Mark*>(event);
    if (m.q == nullptr) ++compute_waits;
    run_until(m.q, m.target);
  }
  void synchronize_stream(void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto* q = static_cast<Queue*>(stream);
    if (q == nullptr) ++compute_waits;
    if (q) run_until(q, q->enqueued);
  }

  void reset_counts() {
    readbacks = blocking_uploads = async_uploads = async_downloads = unlocked_async =
        compute_waits = 0;
  }

  int async_uploads = 0, async_downloads = 0;
  int unlocked_async = 0;  // asynchronous copies whose host side was not page-locked
  int compute_waits = 0;   // the host waited for the compute stream (event, stream or device)
  int registrations = 0, unregistrations = 0, streams_alive = 0;

 private:
  struct Queue {
    std::deque<std::function<void()>> items;
    std::uint64_t enqueued = 0, done = 0;
  };
  struct Mark {
    Queue* q = nullptr;  // nullptr: recorded on the compute stream (already reached)
    std::uint64_t target = 0;
  };

  bool next_coin() {
    rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng_ >> 33) & 1;
  }
  static std::uint64_t rank_seed() {
    const char* r = std::getenv("RANK");
    return 0x9e3779b97f4a7c15ULL * (1 + (r ? std::strtoull(r, nullptr, 10) : 0));
  }
  void enqueue(void* stream, std::function<void()> item) {
    auto* q = static_cast<Queue*>(stream);
    if (q == nullptr) {
      item();
      return;
    }
    q->items.push_back(std::move(item));
    ++q->enqueued;
  }
  void run_until(Queue* q, std::uint64_t target) {
    while (q && q->done < target) {
      std::function<void()> item = std::move(q->items.front());
      q->items.pop_front();
      item();
      ++q->done;
    }
  }
  static bool inside(const std::map<const char*, std::size_t>& blocks, const void* p,
                     std::size_t n) {
    const char* c = static_cast<const char*>(p);
    auto it = blocks.upper_bound(c);
    return it != blocks.begin() && c + n <= std::prev(it)->first + std::prev(it)->second;
  }
  void check_locked(const void* p, std::size_t n) {
    if (!inside(locked_, p, n)) ++unlocked_async;
  }

  std::recursive_mutex mu_;
  std::uint64_t rng_ = rank_seed();
  std::map<const char*, std::size_t> locked_;  // page-locked host blocks: start -> bytes
  std::map<const char*, std::size_t> allocs_;  // live device allocations: start -> bytes
};

// One per program, never destroyed (tensors in statics may outlive any destruction order).
inline LazyStreamDevice& lazy_stream_device() {
  static LazyStreamDevice* d = new LazyStreamDevice();
  return *d;
}

}  // namespace cohort::testing
