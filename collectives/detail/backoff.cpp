// usable_cpus() and Backoff::pause() (backoff.hpp): spin, then yield, then sleep, so that a short
// wait costs no system call and a long one does not starve the peer it waits for.
#include "detail/backoff.hpp"

#include <sched.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cohort::comm::detail {

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

void Backoff::pause() {
  ++polls_;
  if (polls_ < spin_limit_) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
    return;
  }
  // About 2000 yields (milliseconds when others want the core, less otherwise), then sleep.
  if (polls_ < spin_limit_ + 2000) {
    sched_yield();
    return;
  }
  const timespec ts{0, 50 * 1000};
  nanosleep(&ts, nullptr);
}

}  // namespace cohort::comm::detail
