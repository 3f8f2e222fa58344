// How many threads the host's GEMM (oneDNN on OpenMP) may use. OpenMP's default is every core;
// with several ranks per machine that oversubscribes the cores, and OpenMP's spin-waiting threads
// then slow a 2-rank job down by 7x (measured: 145 vs 1980 images/s for the MNIST CNN on 2
// cores), and srun jobs 5x (216 vs 1053 images/s) when a second reader of the launchers'
// variables missed Slurm's task count. So, in order:
//   1. OMP_NUM_THREADS, when set, wins (the user's word);
//   2. under srun with --cpus-per-task, SLURM_CPUS_PER_TASK (at most the CPUs we may run on);
//   3. else the CPUs in this process's affinity mask (sched_getaffinity: what a cgroup, taskset or
//      a launcher's binding left us) divided by the ranks on this host, as LaunchInfo reads them
//      (cohort/core/launch_info.hpp, the one reader of launcher variables), at least 1.
// Rule 3 divides even when a launcher bound each rank to its own CPUs (mpirun --map-by
// slot:PE=4): that undersubscribes by the local rank count, where not dividing under a shared
// cgroup would oversubscribe, which costs far more. Such jobs set OMP_NUM_THREADS.
// Rules 2 and 3 give the most the GEMM may use; while other processes keep the CPUs busy it runs
// on one (thread_governor.hpp: a team waiting for a descheduled thread ran 2.9x slower).
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cohort/core/error.hpp"
#include "cohort/core/launch_info.hpp"
#include "host_device.hpp"
#include "thread_governor.hpp"

namespace cohort::host {
namespace {

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n >= 1) return n;
  }
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

HostThreads decide() {
  HostThreads t;
  if (const char* user = std::getenv("OMP_NUM_THREADS"); user && *user) {
    t.threads = omp_get_max_threads();
    t.reason = std::string("OMP_NUM_THREADS=") + user;
    return t;
  }
  const int cpus = affinity_cpus();
  LaunchInfo info;
  std::string launch_error;
  try {
    info = LaunchInfo::from_env();
  } catch (const Error& e) {
    // The process group reports this properly when the program starts one; a program that never
    // does should still get a sane thread count.
    launch_error = e.what();
  }
  if (info.cpus_per_task >= 1) {
    t.threads = std::min(info.cpus_per_task, cpus);
    t.reason = detail::concat("SLURM_CPUS_PER_TASK=", info.cpus_per_task, ", ", cpus,
                              " CPUs in the affinity mask");
    return t;
  }
  const int local = std::max(1, info.local_world_size);
  t.threads = std::max(1, cpus / local);
  t.reason = detail::concat(cpus, " CPUs in the affinity mask / ", local, " rank",
                            local == 1 ? "" : "s", " on this host (",
                            info.source.empty() ? "default" : info.source, ")");
  if (t.threads > 1) t.reason += "; 1 while other processes keep the CPUs busy";
  if (!launch_error.empty()) t.reason += "; launcher variables unreadable: " + launch_error;
  return t;
}

}  // namespace

namespace {
HostThreads& decided() {
  // Decided once per process: the environment and the affinity mask are read at the host device's
  // creation, before any GEMM runs. set_threads() may replace it later.
  static HostThreads t = [] {
    ::pthread_atfork(nullptr, nullptr, &on_fork_child);  // thread_governor.hpp says why
    HostThreads d = decide();
    omp_set_num_threads(d.threads);
    d.threads = omp_get_max_threads();
    return d;
  }();
  return t;
}
}  // namespace

const HostThreads& configure_threads() { return decided(); }

void set_threads(int threads) {
  COHORT_CHECK(threads >= 1, "set_host_threads: the thread count must be >= 1, got ", threads);
  HostThreads& t = decided();
  stop_following_contention();
  omp_set_num_threads(threads);
  t.threads = omp_get_max_threads();
  t.reason = detail::concat("set_host_threads(", threads, ")");
}

}  // namespace cohort::host
