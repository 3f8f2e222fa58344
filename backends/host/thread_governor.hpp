// The host GEMM's thread count under contention (internal).
//
// Why: oneDNN runs on OpenMP, whose parallel regions end at a barrier that waits for the slowest
// thread. When another process keeps every core busy, one of our threads is often descheduled, and
// the whole team waits for it: the MNIST CNN ran 2.9x slower with 2 threads than with 1 on this
// 2-core machine under a busy loop per core (docs/benchmarks/runtime.md, "Host threads").
// OMP_WAIT_POLICY cannot help from inside the process (libgomp reads it when it loads, before any
// of our code) and passive waiting alone still left it 30% slower. So the count follows contention
// instead:
//
// Every `period` the governor reads how long this process's threads sat runnable but not running
// (the run_delay of /proc/self/task/*/schedstat) per second of wall time. Above `drop_above` the
// CPUs are contended: run 1 thread, and hold that for `hold` before trying the full count again.
// A retry that is contended again doubles the hold (up to `max_hold`), so a steady competitor
// costs one short probe per max_hold; below `restore_below` with 1 thread, the full count returns
// at the next probe. Decide() is a pure function so the policy is tested without a busy machine.
#pragma once

#include <chrono>
#include <cstdint>

namespace cohort::host {

struct GovernorPolicy {
  std::chrono::milliseconds period{250};
  double drop_above = 0.25;     // run_delay seconds per wall second, all threads summed
  double restore_below = 0.10;  // ... measured with 1 thread
  std::chrono::milliseconds hold{2000};
  std::chrono::milliseconds max_hold{32000};
};

struct GovernorState {
  int threads = 1;                                // what the GEMM runs with now
  std::chrono::milliseconds hold{0};              // current hold after a drop (0: none yet)
  std::chrono::steady_clock::time_point held_until{};
};

// One decision at `now`, given the state and the delay ratio of the period that just ended.
GovernorState decide(const GovernorState& s, int max_threads, double delay_ratio,
                     std::chrono::steady_clock::time_point now, const GovernorPolicy& p = {});

// Sum of run_delay (ns) over this process's threads; -1 where /proc/self/task/*/schedstat is
// not readable (then the governor stays off).
std::int64_t process_run_delay_ns();

// Called before each oneDNN call: at most once per period reads the delay and applies decide()
// through omp_set_num_threads. A no-op when off: OMP_NUM_THREADS set by the user, one thread
// anyway, COHORT_HOST_THREADS_ADAPT=0, or no schedstat.
void adapt_threads_to_load();
// Turns the governor off for good (set_host_threads: the user's count wins).
void stop_following_contention();

// fork() and OpenMP: GNU OpenMP's thread pool does not survive fork (a child that enters a
// parallel region waits forever for threads that exist only in the parent). The host device
// registers on_fork_child() with pthread_atfork when it decides its thread count: in a forked
// child every host op, GEMM and convolution then runs on the calling thread (async-signal-safe:
// an atomic store and the calling thread's own OpenMP setting), and the governor stays off.
void on_fork_child();
bool in_forked_child();

}  // namespace cohort::host
