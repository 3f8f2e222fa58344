// The host GEMM's thread governor (backends/host/thread_governor.hpp): its decisions by hand on
// a time line, and the /proc reader on this process. What it buys on a busy machine is measured by
// bench/host_threads.sh, not here (a timed unit test would be noise).
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "cohort/core/error.hpp"
#include "cohort/devices.hpp"
#include "host/thread_governor.hpp"

using namespace cohort::host;
using ms = std::chrono::milliseconds;

TEST_CASE("thread governor: drops under contention, holds, backs off, restores when quiet") {
  const GovernorPolicy p;  // drop above 0.25, restore below 0.10, hold 2 s doubling to 32 s
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  GovernorState s;
  s.threads = 2;
  // Quiet: stays at 2.
  s = decide(s, 2, 0.02, t0, p);
  CHECK(s.threads == 2);
  // Contended: 1 thread, held 2 s.
  s = decide(s, 2, 0.80, t0 + ms(250), p);
  CHECK(s.threads == 1);
  CHECK(s.hold == ms(2000));
  // Still contended at 1 thread, inside the hold: stays at 1.
  s = decide(s, 2, 0.40, t0 + ms(1000), p);
  CHECK(s.threads == 1);
  // The hold is over: a probe with 2 threads.
  s = decide(s, 2, 0.40, t0 + ms(2300), p);
  CHECK(s.threads == 2);
  // Contended again at once: back to 1, the hold doubled.
  s = decide(s, 2, 0.90, t0 + ms(2550), p);
  CHECK(s.threads == 1);
  CHECK(s.hold == ms(4000));
  // The competitor left: a quiet period at 1 thread restores 2 before the hold ends.
  s = decide(s, 2, 0.01, t0 + ms(2800), p);
  CHECK(s.threads == 2);
  // Long quiet at 2 threads forgets the back-off; the next drop holds 2 s again.
  s = decide(s, 2, 0.0, t0 + ms(2800 + 4 * 4000 + 1), p);
  CHECK(s.hold == ms(0));
  s = decide(s, 2, 0.5, t0 + ms(30000), p);
  CHECK(s.hold == ms(2000));
  // The hold never grows past max_hold.
  GovernorState h;
  h.threads = 2;
  h.hold = ms(32000);
  CHECK(decide(h, 2, 0.9, t0, p).hold == ms(32000));
  // One thread allowed at all: always 1.
  CHECK(decide(s, 1, 0.0, t0, p).threads == 1);
}

TEST_CASE("thread governor: this process's run delay is readable and never decreases") {
  const std::int64_t a = process_run_delay_ns();
  REQUIRE(a >= 0);  // /proc/self/task/*/schedstat on every Linux this project supports
  std::this_thread::sleep_for(ms(5));
  CHECK(process_run_delay_ns() >= a);
}

TEST_CASE("set_host_threads: the count and its reason, the governor off; bad counts refused") {
  cohort::set_host_threads(1);
  CHECK(cohort::host_threads().threads == 1);
  CHECK(cohort::host_threads().reason == "set_host_threads(1)");
  CHECK_THROWS_WITH_AS(cohort::set_host_threads(0),
                       doctest::Contains("the thread count must be >= 1, got 0"), cohort::Error);
  CHECK(cohort::host_threads().threads == 1);
}
