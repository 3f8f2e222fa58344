// Waiting without system calls while the wait is short, and without starving other processes
// when it is long or when there are more ranks than cores.
#pragma once

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

}  // namespace cohort::comm::detail
