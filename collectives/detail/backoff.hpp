// Waiting without system calls while the wait is short, and without starving other processes
// when it is long or when there are more ranks than cores.
#pragma once

#include <atomic>
#include <cstdint>

namespace cohort::comm::detail {

// Number of CPUs this process may run on (sched_getaffinity), at least 1.
int usable_cpus();

// Call pause() after every unsuccessful poll. The first polls only execute the CPU's pause
// instruction (no system call: the latency-critical case where the peer is running on another
// core); then the thread yields its core (sched_yield); after a few milliseconds it sleeps 50 us
// at a time. With more local ranks than cores (`oversubscribed`) it yields almost at once, since
// spinning would only delay the very peer it waits for. reset() after any progress, so that a
// long op made of many short waits keeps spinning.
class Backoff {
 public:
  explicit Backoff(bool oversubscribed) : spin_limit_(oversubscribed ? 16 : 1024) {}
  void pause();
  void reset() { polls_ = 0; }

 private:
  std::uint32_t spin_limit_;
  std::uint32_t polls_ = 0;
};

// Whether queuing an op wakes the thread that runs ops nobody waits for (ucx's progress thread,
// hier's worker). With more ranks than cores (`lazy`, detail::yield_when_idle) that wake-up is a
// context switch on a core some rank needs, and the caller mostly waits next and runs the op
// itself, so the first op queued is left asleep; the thread is woken when a second op is queued
// before anyone ran the queue, when an op is polled, or by its own timer (2 ms in ucx and hier).
class LazyWake {
 public:
  explicit LazyWake(bool lazy) : lazy_(lazy) {}
  // Whether the thread must also wake by itself now and then (its timer): queued() may skip.
  bool lazy() const { return lazy_; }
  // After queuing an op: whether to notify the thread now.
  bool queued() {
    if (lazy_ && !skipped_.exchange(true, std::memory_order_acq_rel)) return false;
    skipped_.store(false, std::memory_order_release);
    return true;
  }
  // A waiting caller runs the queue now: nothing queued so far is waiting for the thread.
  void driving() { skipped_.store(false, std::memory_order_release); }
  // An op was polled (test()): whether to notify the thread now.
  bool polled() { return skipped_.exchange(false, std::memory_order_acq_rel); }

 private:
  const bool lazy_;
  std::atomic<bool> skipped_{false};
};

}  // namespace cohort::comm::detail
