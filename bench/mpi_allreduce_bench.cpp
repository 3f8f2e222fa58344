// The Open MPI peer of cohort-bench (tools/cohort_bench.cpp): MPI_Allreduce of float sums swept
// over sizes, printing the same nccl-tests columns with the same definitions (time = the slowest
// rank's average over -n back-to-back ops; busbw = algbw * 2(n-1)/n), so bench/mpi_compare.sh can
// put the two side by side.
//
// -z picks how the -n timed ops run, with the meaning cohort-bench gives it:
//   -z 1 (default): blocking MPI_Allreduce in a loop (as MPI users and the OSU benchmarks call it);
//   -z 0: -n MPI_Iallreduce issued, then one MPI_Waitall (how cohort-bench and nccl-tests time by
//         default). All -n ops are in flight on the same buffers at once, as in nccl-tests; every
//         op writes the same values, so the overlap changes timing only.
//
//   mpirun --allow-run-as-root -np 2 build/bin/mpi_allreduce_bench -b 8 -e 256M -f 4 -n 50 -w 5
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::size_t parse_size(const char* v) {
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (*end == 'K' || *end == 'k') x *= 1024.0;
  else if (*end == 'M' || *end == 'm') x *= 1024.0 * 1024;
  else if (*end == 'G' || *end == 'g') x *= 1024.0 * 1024 * 1024;
  return static_cast<std::size_t>(x);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::size_t min_bytes = 8, max_bytes = 64u << 20;
  double factor = 2;
  int iters = 20, warmup = 5;
  bool check = true;
  bool blocking = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "-b") min_bytes = parse_size(argv[i + 1]);
    else if (a == "-e") max_bytes = parse_size(argv[i + 1]);
    else if (a == "-f") factor = std::atof(argv[i + 1]);
    else if (a == "-n") iters = std::atoi(argv[i + 1]);
    else if (a == "-w") warmup = std::atoi(argv[i + 1]);
    else if (a == "-c") check = std::atoi(argv[i + 1]) != 0;
    else if (a == "-z" &&
             (std::strcmp(argv[i + 1], "0") == 0 || std::strcmp(argv[i + 1], "1") == 0))
      blocking = argv[i + 1][0] == '1';
    else if (a == "-z") {
      if (rank == 0)
        std::fprintf(stderr, "mpi_allreduce_bench: -z expects 0 or 1, got '%s'\n", argv[i + 1]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    else {
      if (rank == 0) std::fprintf(stderr, "mpi_allreduce_bench: unknown option '%s'\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (factor <= 1 || iters < 1) {
    if (rank == 0) std::fprintf(stderr, "mpi_allreduce_bench: need -f > 1 and -n >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::size_t cap = max_bytes / 4 + 16;
  std::vector<float> send(cap, 0.f), recv(cap, 0.f);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  if (char* nl = std::strchr(version, ',')) *nl = '\0';
  const double bus = 2.0 * (n - 1) / n;
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(iters));
  const auto run = [&](int count, int ops) {
    if (blocking) {
      for (int i = 0; i < ops; ++i)
        MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      return;
    }
    for (int i = 0; i < ops; ++i)
      MPI_Iallreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                     &reqs[static_cast<std::size_t>(i)]);
    MPI_Waitall(ops, reqs.data(), MPI_STATUSES_IGNORE);
  };
  if (rank == 0) {
    std::printf("# mpi_allreduce_bench: %s, %s, %d ranks, float, sum, out of place, "
                "%d iters (%s), %d warmup\n#\n",
                blocking ? "MPI_Allreduce" : "MPI_Iallreduce + MPI_Waitall", version, n, iters,
                blocking ? "each waited for" : "issued, then waited for", warmup);
    std::printf("# %10s %12s %9s %7s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "time",
                "algbw", "busbw", "#wrong");
    std::printf("# %10s %12s %9s %7s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)",
                "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }
  for (double sz = static_cast<double>(min_bytes); sz <= static_cast<double>(max_bytes) * 1.0000001;
       sz *= factor) {
    const int count = static_cast<int>(static_cast<std::size_t>(sz) / 4);
    for (int i = 0; i < warmup; i += iters) run(count, std::min(iters, warmup - i));
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    run(count, iters);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count() / iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long long wrong = 0;
    if (check) {
      // Same integer-valued pattern as cohort-bench: exact sums.
      for (int i = 0; i < count; ++i)
        send[static_cast<std::size_t>(i)] = static_cast<float>(
            static_cast<long>((static_cast<std::size_t>(i) * 7 + rank * 13) % 31) - 15);
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      for (int i = 0; i < count; ++i) {
        double expect = 0;
        for (int r = 0; r < n; ++r)
          expect += static_cast<double>(
              static_cast<long>((static_cast<std::size_t>(i) * 7 + r * 13) % 31) - 15);
        wrong += recv[static_cast<std::size_t>(i)] != static_cast<float>(expect);
      }
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    const double bytes = static_cast<double>(count) * 4;
    const double algbw = bytes / (us * 1e3);
    if (rank == 0) {
      std::printf("  %10zu %12d %9s %7s %10.3f %8.2f %8.2f %7lld\n",
                  static_cast<std::size_t>(count) * 4, count, "float", "sum", us, algbw,
                  algbw * bus, wrong);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
