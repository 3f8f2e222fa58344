// Entry point of test_collectives_ucx: the doctest suite, and two extra modes
//   test_collectives_ucx --bench [ranks]   all-reduce busbw, ranks (default 2) as processes
//   test_collectives_ucx --ucx-worker DIR N RANK / --ucx-bench-worker DIR N RANK   (internal: the
//       rank processes that the "3 processes" test and --bench start)
//   test_collectives_ucx --ucx-stall-worker DIR KIND RANK   (internal: the ranks of the stalled-
//       transfer test)
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ucx/ucx_communicator.hpp"

int ucx_worker_main(const std::string& dir, int n, int rank);  // test_ucx.cpp
int ucx_stall_worker_main(const std::string& dir, const std::string& kind,
                          int rank);  // test_ucx.cpp

namespace {

using Clock = std::chrono::steady_clock;

// nccl-tests style table of float32 sum all-reduce, out of place; time is the slowest rank's
// mean per iteration (the median of COHORT_BENCH_REPEATS runs, default 1); busbw = algbw * 2 (n-1)
// / n. COHORT_BENCH_SIZES (bytes, comma separated) overrides the sizes; COHORT_BENCH_BIND=1 binds
// each rank to its own core.
int bench_worker(const std::string& dir, int n, int rank) {
  using namespace ucxtest;
  std::vector<std::size_t> sizes = {4,       1 << 10, 16 << 10, 64 << 10, 256 << 10,
                                    1 << 20, 4 << 20, 16 << 20, 64 << 20};
  if (const char* s = std::getenv("COHORT_BENCH_SIZES")) {
    sizes.clear();
    std::string list = s;
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      sizes.push_back(std::stoull(list.substr(at, comma - at)));
      at = comma + 1;
    }
  }
  // COHORT_BENCH_BIND=1 binds rank r to the r-th usable CPU (as mpirun --bind-to core does by
  // default for small jobs); the progress thread, created later, inherits the binding.
  if (const char* b = std::getenv("COHORT_BENCH_BIND"); b != nullptr && std::string(b) == "1") {
    cpu_set_t allowed, one;
    sched_getaffinity(0, sizeof(allowed), &allowed);
    CPU_ZERO(&one);
    for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &allowed) && seen++ == rank % CPU_COUNT(&allowed)) CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  const char* rep = std::getenv("COHORT_BENCH_REPEATS");
  const int repeats = rep ? std::max(1, std::atoi(rep)) : 1;
  try {
    auto comm = cohort::comm::ucx::factory().create(group_info(rank, n), directory_store(dir));
    if (rank == 0)
      std::printf(
          "# ucx all-reduce, %d ranks (processes), float32 sum, out of place\n"
          "# %12s %12s %6s %6s %11s %8s %8s %7s\n",
          n, "size(B)", "count", "type", "redop", "time(us)", "algbw", "busbw", "#wrong");
    for (std::size_t bytes : sizes) {
      const std::size_t count = std::max<std::size_t>(1, bytes / 4);
      std::vector<float> send(count, 1.0f), recv(count, 0.0f);
      auto once = [&] {
        comm->allreduce(send.data(), recv.data(), count, DType::f32, ReduceOp::sum)->wait();
      };
      // Warm up (connections, registration caches), then size the run to about 0.5 s.
      const auto w0 = Clock::now();
      for (int i = 0; i < 3; ++i) once();
      double est = std::chrono::duration<double>(Clock::now() - w0).count() / 3;
      comm->allreduce(&est, &est, 1, DType::f64, ReduceOp::max)->wait();
      const int iters = static_cast<int>(std::clamp(0.5 / std::max(est, 1e-7), 5.0, 20000.0));
      // COHORT_BENCH_REPEATS runs of ~0.5 s each; the median is reported (the machine is shared).
      std::vector<double> runs;
      for (int k = 0; k < repeats; ++k) {
        comm->barrier()->wait();
        const auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i) once();
        double sec = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
        comm->allreduce(&sec, &sec, 1, DType::f64, ReduceOp::max)->wait();
        runs.push_back(sec);
      }
      std::sort(runs.begin(), runs.end());
      const double sec = runs[runs.size() / 2];
      std::int64_t wrong = 0;
      for (float v : recv) wrong += v != static_cast<float>(n);
      comm->allreduce(&wrong, &wrong, 1, DType::i64, ReduceOp::sum)->wait();
      if (rank == 0) {
        const double algbw = static_cast<double>(count * 4) / sec / 1e9;
        std::printf("  %12zu %12zu %6s %6s %11.2f %8.2f %8.2f %7lld   # min %.2f us, max %.2f us\n",
                    count * 4, count, "float", "sum", sec * 1e6, algbw, algbw * 2.0 * (n - 1) / n,
                    static_cast<long long>(wrong), runs.front() * 1e6, runs.back() * 1e6);
        std::fflush(stdout);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
    return 2;
  }
}

int bench_main(int n) {
  char dir[] = "/tmp/cohort-ucx-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 2;
  const auto codes = ucxtest::run_processes(n, {"--ucx-bench-worker", dir, std::to_string(n)},
                                            std::chrono::seconds(600));
  std::system((std::string("rm -rf ") + dir).c_str());
  for (int c : codes)
    if (c != 0) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((mode == "--ucx-worker" || mode == "--ucx-bench-worker") && argc == 5) {
    const std::string dir = argv[2];
    const int n = std::atoi(argv[3]), rank = std::atoi(argv[4]);
    return mode == "--ucx-worker" ? ucx_worker_main(dir, n, rank) : bench_worker(dir, n, rank);
  }
  if (mode == "--ucx-stall-worker" && argc == 5)
    return ucx_stall_worker_main(argv[2], argv[3], std::atoi(argv[4]));
  if (mode == "--bench") return bench_main(argc > 2 ? std::atoi(argv[2]) : 2);
  doctest::Context context(argc, argv);
  return context.run();
}
