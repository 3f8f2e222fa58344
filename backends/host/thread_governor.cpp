// The thread governor (see thread_governor.hpp): a pure decision, a /proc reader, and the glue
// that applies it before oneDNN calls.
#include "thread_governor.hpp"

#include <dirent.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "host_device.hpp"

namespace cohort::host {

GovernorState decide(const GovernorState& s, int max_threads, double delay_ratio,
                     std::chrono::steady_clock::time_point now, const GovernorPolicy& p) {
  GovernorState n = s;
  if (max_threads <= 1) {
    n.threads = 1;
    return n;
  }
  if (s.threads > 1) {
    if (delay_ratio > p.drop_above) {
      // A drop right after a retry: the competitor is still there, wait longer next time.
      n.hold = s.hold.count() == 0 ? p.hold : std::min(p.max_hold, s.hold * 2);
      n.threads = 1;
      n.held_until = now + n.hold;
    } else if (s.hold.count() > 0 && now >= s.held_until + s.hold * 4) {
      n.hold = std::chrono::milliseconds{0};  // uncontended for a good while: forget the history
    }
    return n;
  }
  // At 1 thread: try the full count once the hold is over, at once when the machine went quiet.
  if (now >= s.held_until || delay_ratio < p.restore_below) {
    n.threads = max_threads;
    n.held_until = now;
  }
  return n;
}

std::int64_t process_run_delay_ns() {
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return -1;
  std::int64_t total = 0;
  bool any = false;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) continue;  // the thread just ended
    unsigned long long cpu = 0, delay = 0;
    if (std::fscanf(f, "%llu %llu", &cpu, &delay) == 2) {
      total += static_cast<std::int64_t>(delay);
      any = true;
    }
    std::fclose(f);
  }
  ::closedir(d);
  return any ? total : -1;
}

namespace {
struct Governor {
  std::mutex mu;
  std::atomic<bool> on{false};
  int max_threads = 1;
  GovernorState state;
  std::int64_t last_delay = 0;
  std::chrono::steady_clock::time_point last_read;
  std::atomic<std::int64_t> next_read_ns{0};  // steady_clock ns; checked without the lock
};

Governor& governor() {
  static Governor* g = [] {
    auto* gv = new Governor;  // never destroyed: GEMMs may run during static destruction
    const HostThreads& t = configure_threads();
    const char* user = std::getenv("OMP_NUM_THREADS");
    const char* adapt = std::getenv("COHORT_HOST_THREADS_ADAPT");
    gv->max_threads = t.threads;
    gv->state.threads = t.threads;
    gv->last_delay = process_run_delay_ns();
    gv->last_read = std::chrono::steady_clock::now();
    gv->on = !(user && *user) && !(adapt && std::strcmp(adapt, "0") == 0) && t.threads > 1 &&
             gv->last_delay >= 0;
    return gv;
  }();
  return *g;
}
}  // namespace

void stop_following_contention() {
  Governor& g = governor();
  std::lock_guard<std::mutex> lock(g.mu);
  g.on = false;
}

namespace {
std::atomic<bool> forked_child{false};
}

void on_fork_child() {
  forked_child.store(true, std::memory_order_relaxed);
  omp_set_num_threads(1);
}

bool in_forked_child() { return forked_child.load(std::memory_order_relaxed); }

void adapt_threads_to_load() {
  // Inside a team (a host launch split between threads) omp_set_num_threads would set only that
  // worker's count while the governor believed it had changed the process's.
  if (in_forked_child() || omp_in_parallel()) return;
  Governor& g = governor();
  if (!g.on) return;
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t now_ns = now.time_since_epoch().count();
  if (now_ns < g.next_read_ns.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(g.mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const GovernorPolicy policy;
  const std::int64_t delay = process_run_delay_ns();
  const double wall = std::chrono::duration<double>(now - g.last_read).count();
  if (delay >= 0 && wall > 0) {
    const double ratio = static_cast<double>(delay - g.last_delay) * 1e-9 / wall;
    const GovernorState next = decide(g.state, g.max_threads, ratio, now, policy);
    if (next.threads != g.state.threads) omp_set_num_threads(next.threads);
    g.state = next;
  }
  g.last_delay = delay;
  g.last_read = now;
  g.next_read_ns.store(
      now_ns + std::chrono::duration_cast<std::chrono::steady_clock::duration>(policy.period).count(),
      std::memory_order_relaxed);
}

}  // namespace cohort::host
