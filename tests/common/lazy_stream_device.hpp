// A device the host may not address whose side streams really are asynchronous, and which checks
// the rules CUDA's compute-sanitizer enforces on a GPU. Work enqueued on a stream made by
// create_stream() (copies, waits) is queued and lands at moments chosen by a seeded pseudo-random
// sequence: at any call into the device (not only when someone waits), nothing, one item, or a
// whole queue at once (a fast, idle GPU); everything on synchronize_event()/synchronize_stream().
// The compute stream (nullptr) runs at once, as ops and blocking copies do. Host memory
// underneath; every op runs on the host device.
//
// Why: RemoteDevice (remote_device.hpp) is synchronous, so code that forgets an event on a GPU
// (reads a host buffer before the download into it landed, overwrites memory a queued copy still
// reads, starts a collective too early) still passes there. Here such code reads stale or
// poisoned bytes and the results change, on CPU-only CI. One landing schedule shows one
// interleaving; reseed() (or COHORT_LAZY_SEED) picks another, and the tests run several (review
// finding G1 hid behind a schedule that never landed a whole download within one query).
//
// What is an error here (take_violations(); the tests require none). Each is judged against the
// copies still queued when the call is made, before the schedule lands anything at that call: a
// schedule that had not landed the copy yet reports it (several seeds make one likely):
//  - freeing device memory (deallocate), page-locked memory (deallocate_pinned) or unlocking
//    registered memory (unregister_host_memory) while a queued, unfinished copy still uses it
//    (CUDA: a use-after-free the caching allocator cannot see);
//  - a blocking copy (copy_to_host, copy_from_host, copy) touching device memory that a queued
//    copy on a side stream still writes, or writing memory it still reads, with no event between
//    (a race: the compute stream is not ordered after side streams);
//  - changing the host source of an asynchronous upload before it ran (checked when it runs);
//  - an asynchronous copy whose host side is not page-locked (counted in unlocked_async);
//  - using the device (allocations, copies, streams, events) from a thread that never selected it
//    with Device::make_current(), but for the thread that made the device (CUDA: a new thread's
//    current device is device 0, so a worker thread that forgets cudaSetDevice uses the wrong GPU
//    on every rank but the first).
// And the host side of an asynchronous download is poisoned (0xFF bytes, NaN as floats) when it
// is enqueued: CUDA leaves it undefined until the copy's event completes, and a reader that does
// not wait sees NaN here rather than the last step's values.
// It also counts blocking transfers and how often the host waited for the compute stream.
// Stream and event semantics follow CUDA's: a blocking copy or synchronize() waits for the
// compute stream only, never for side streams.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host_backed_device.hpp"

namespace cohort::testing {

class LazyStreamDevice final : public HostBackedDevice {
 public:
  LazyStreamDevice() : HostBackedDevice("lazy"), owner_(std::this_thread::get_id()) {
    const char* s = std::getenv("COHORT_LAZY_SEED");
    reseed(s ? std::strtoull(s, nullptr, 10) : 0);
  }

  // A new landing schedule: `seed` mixed with RANK, so ranks land in orders of their own.
  void reseed(std::uint64_t seed) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    const char* r = std::getenv("RANK");
    rng_ = 0x9e3779b97f4a7c15ULL * (1 + (r ? std::strtoull(r, nullptr, 10) : 0)) ^
           (seed * 0xbf58476d1ce4e5b9ULL + seed);
  }

  void make_current() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    selected_.insert(std::this_thread::get_id());
  }

  void* allocate(std::size_t bytes) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("allocate");
    void* p = HostBackedDevice::allocate(bytes);
    if (p) allocs_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      auto it = allocs_.find(static_cast<const char*>(p));
      if (it != allocs_.end()) {
        const bool in_use = !check_unused(p, it->second, "deallocate (device memory)");
        allocs_.erase(it);
        if (in_use) {  // reported; kept until the device goes, so the queued copy stays defined
          quarantine_.push_back({p, bytes, false});
          return;
        }
      }
      enter("deallocate");
    }
    HostBackedDevice::deallocate(p, bytes);
  }
  ~LazyStreamDevice() override {
    for (const Block& b : quarantine_) {
      if (b.pinned) Device::deallocate_pinned(b.p, b.bytes);
      else HostBackedDevice::deallocate(b.p, b.bytes);
    }
  }
  // Whether [p, p + n) lies in one live allocation of this device ("device memory").
  bool owns(const void* p, std::size_t n) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return inside(allocs_, p, n);
  }
  void synchronize() override { ++compute_waits; }  // the compute stream is always finished
  void run(const OpCall& call) override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      enter("run");
    }
    HostBackedDevice::run(call);
  }

  void copy_from_host(void* d, const void* s, std::size_t n) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    check_race(d, n, /*write=*/true, "copy_from_host (destination)");
    enter("copy_from_host");
    HostBackedDevice::copy_from_host(d, s, n);
  }
  void copy_to_host(void* d, const void* s, std::size_t n) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    check_race(s, n, /*write=*/false, "copy_to_host (source)");
    enter("copy_to_host");
    HostBackedDevice::copy_to_host(d, s, n);
  }
  void copy(void* d, const void* s, std::size_t n) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    check_race(s, n, /*write=*/false, "copy (source)");
    check_race(d, n, /*write=*/true, "copy (destination)");
    enter("copy");
    HostBackedDevice::copy(d, s, n);
  }

  void* allocate_pinned(std::size_t bytes) override {
    void* p = Device::allocate_pinned(bytes);
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("allocate_pinned");
    locked_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void deallocate_pinned(void* p, std::size_t bytes) noexcept override {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      const bool in_use = !check_unused(p, bytes, "deallocate_pinned");
      locked_.erase(static_cast<const char*>(p));
      if (in_use) {  // as in deallocate()
        quarantine_.push_back({p, bytes, true});
        return;
      }
      enter("deallocate_pinned");
    }
    Device::deallocate_pinned(p, bytes);
  }
  bool register_host_memory(void* p, std::size_t bytes) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("register_host_memory");
    ++registrations;
    locked_[static_cast<const char*>(p)] = bytes;
    return true;
  }
  void unregister_host_memory(void* p) noexcept override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++unregistrations;
    auto it = locked_.find(static_cast<const char*>(p));
    if (it != locked_.end()) {
      check_unused(p, it->second, "unregister_host_memory");
      locked_.erase(it);
    }
    enter("unregister_host_memory");
  }

  void copy_from_host_async(void* d, const void* s, std::size_t n, void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("copy_from_host_async");
    ++async_uploads;
    check_locked(s, n);
    // The source must stay as it is until the copy ran: its hash now, compared when it runs.
    const std::uint64_t h = hash(s, n);
    enqueue(stream, {{s, n, false}, {d, n, true}}, [this, d, s, n, h] {
      if (hash(s, n) != h) violation("the host source of an asynchronous upload (", n,
                                     " bytes) changed before the upload ran");
      std::memmove(d, s, n);
    });
  }
  void copy_to_host_async(void* d, const void* s, std::size_t n, void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("copy_to_host_async");
    ++async_downloads;
    check_locked(d, n);
    if (stream != nullptr) std::memset(d, 0xFF, n);  // undefined until it lands: NaN meanwhile
    enqueue(stream, {{s, n, false}, {d, n, true}}, [d, s, n] { std::memmove(d, s, n); });
  }

  void* create_stream() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("create_stream");
    ++streams_alive;
    auto* q = new Queue();
    queues_.push_back(q);
    return q;
  }
  void destroy_stream(void* stream) noexcept override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto* q = static_cast<Queue*>(stream);
    run_until(q, q->enqueued);  // as cudaStreamDestroy: queued work still runs
    queues_.erase(std::find(queues_.begin(), queues_.end(), q));
    delete q;
    --streams_alive;
  }
  void* create_event() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("create_event");
    return new Mark();
  }
  void destroy_event(void* event) noexcept override { delete static_cast<Mark*>(event); }
  void record_event(void* event, void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("record_event");
    auto* q = static_cast<Queue*>(stream);
    *static_cast<Mark*>(event) = Mark{q, q ? q->enqueued : 0};
  }
  void stream_wait_event(void* stream, void* event) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("stream_wait_event");
    const Mark m = *static_cast<Mark*>(event);  // the point recorded now, as CUDA takes it
    if (stream == nullptr) {
      run_until(m.q, m.target);  // the compute stream runs at once: it waits right here
      return;
    }
    enqueue(stream, {}, [this, m] { run_until(m.q, m.target); });
  }
  bool query_event(void* event) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("query_event");
    const Mark& m = *static_cast<Mark*>(event);
    if (m.q == nullptr || m.q->done >= m.target) return true;
    land(m.q);
    return m.q->done >= m.target;
  }
  void synchronize_event(void* event) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("synchronize_event");
    const Mark& m = *static_cast<Mark*>(event);
    if (m.q == nullptr) ++compute_waits;
    run_until(m.q, m.target);
  }
  void synchronize_stream(void* stream) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    enter("synchronize_stream");
    auto* q = static_cast<Queue*>(stream);
    if (q == nullptr) ++compute_waits;
    if (q) run_until(q, q->enqueued);
  }

  void reset_counts() {
    readbacks = blocking_uploads = async_uploads = async_downloads = unlocked_async =
        compute_waits = 0;
  }
  // The rule breaks seen since the last call (see the file's comment), one line each, each
  // once: "" when none (tests CHECK it equals "", so a failure prints them).
  std::string take_violations() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    std::string all;
    for (const std::string& v : violations_) all += v + "\n";
    violations_.clear();
    seen_.clear();
    return all;
  }

  int async_uploads = 0, async_downloads = 0;
  int unlocked_async = 0;  // asynchronous copies whose host side was not page-locked
  int compute_waits = 0;   // the host waited for the compute stream (event, stream or device)
  int registrations = 0, unregistrations = 0, streams_alive = 0;

 private:
  struct Range {
    const void* p;
    std::size_t n;
    bool write;
  };
  struct Item {
    std::vector<Range> uses;
    std::function<void()> run;
  };
  struct Queue {
    std::deque<Item> items;
    std::uint64_t enqueued = 0, done = 0;
  };
  struct Mark {
    Queue* q = nullptr;  // nullptr: recorded on the compute stream (already reached)
    std::uint64_t target = 0;
  };

  std::uint64_t next() {
    rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng_ >> 33;
  }
  // Lands queued work as a GPU might: on half the calls nothing; else one item (a slow copy
  // engine) or the whole queue (an idle, fast GPU), each half the time.
  void land(Queue* q) {
    const std::uint64_t r = next();
    if ((r & 1) == 0 || q->done == q->enqueued) return;
    run_until(q, (r & 2) ? q->enqueued : q->done + 1);
  }
  // Every call into the device: the rules for the calling thread, then, on a quarter of the
  // calls, a random side stream makes progress on its own (copies land while the host does
  // other things, not only when it asks).
  void enter(const char* what) {
    const auto me = std::this_thread::get_id();
    if (me != owner_ && selected_.count(me) == 0)
      violation(what, " from a thread that never selected the device (Device::make_current)");
    if (queues_.empty() || (next() & 3) != 0) return;
    land(queues_[next() % queues_.size()]);
  }
  void enqueue(void* stream, std::vector<Range> uses, std::function<void()> run) {
    auto* q = static_cast<Queue*>(stream);
    if (q == nullptr) {
      run();
      return;
    }
    q->items.push_back(Item{std::move(uses), std::move(run)});
    ++q->enqueued;
  }
  void run_until(Queue* q, std::uint64_t target) {
    while (q && q->done < target) {
      Item item = std::move(q->items.front());
      q->items.pop_front();
      item.run();
      ++q->done;
    }
  }
  static bool overlap(const void* a, std::size_t an, const void* b, std::size_t bn) {
    const char* x = static_cast<const char*>(a);
    const char* y = static_cast<const char*>(b);
    return an > 0 && bn > 0 && x < y + bn && y < x + an;
  }
  // Reports a queued, unfinished item on any side stream that uses [p, p + n); true when none.
  bool check_unused(const void* p, std::size_t n, const char* what) {
    bool unused = true;
    for (Queue* q : queues_)
      for (const Item& it : q->items)
        for (const Range& r : it.uses)
          if (overlap(p, n, r.p, r.n)) {
            unused = false;
            violation(what, " of a block that a queued, unfinished copy on a side stream still ",
                      r.write ? "writes" : "reads", " (no event ordered the free after it)");
          }
    return unused;
  }
  // A blocking copy on the compute stream that reads (write=false) or writes [p, p + n) while a
  // side stream's queued copy writes it (or, for a write, reads it).
  void check_race(const void* p, std::size_t n, bool write, const char* what) {
    for (Queue* q : queues_)
      for (const Item& it : q->items)
        for (const Range& r : it.uses)
          if ((r.write || write) && overlap(p, n, r.p, r.n))
            violation(what, ": memory that a queued copy on a side stream still ",
                      r.write ? "writes" : "reads", ", with no event between them (a race)");
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
  static std::uint64_t hash(const void* p, std::size_t n) {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
  }
  template <typename... A>
  void violation(const A&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    if (seen_.insert(os.str()).second) violations_.push_back("lazy device: " + os.str());
  }

  std::recursive_mutex mu_;
  std::uint64_t rng_ = 0;
  std::thread::id owner_;                      // the thread that made the device: selected
  std::set<std::thread::id> selected_;         // threads that called make_current()
  std::vector<Queue*> queues_;                 // live side streams, in creation order
  std::map<const char*, std::size_t> locked_;  // page-locked host blocks: start -> bytes
  std::map<const char*, std::size_t> allocs_;  // live device allocations: start -> bytes
  struct Block {
    void* p;
    std::size_t bytes;
    bool pinned;
  };
  std::vector<Block> quarantine_;  // freed while a queued copy still used them (a violation)
  std::vector<std::string> violations_;
  std::set<std::string> seen_;
};

// One per program, never destroyed (tensors in statics may outlive any destruction order).
inline LazyStreamDevice& lazy_stream_device() {
  static LazyStreamDevice* d = new LazyStreamDevice();
  return *d;
}

}  // namespace cohort::testing
