// The host GEMM's thread count and its reason (backends/host/host_threads.cpp) under each
// launcher's variables, an affinity mask and the user's OMP_NUM_THREADS.
// Usage: test_host_threads EXPECTED [REASON_PART]
//   EXPECTED: a number, or "cpus/N" (the CPUs in this process's affinity mask divided by N, at
//   least 1); REASON_PART: text cohort::host_threads().reason must contain. Exits 1 on mismatch.
#include <omp.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cohort/devices.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) return 2;
  const cohort::HostThreads& t = cohort::host_threads();
  const std::string want = argv[1];
  int expected = 0;
  if (want.rfind("cpus/", 0) == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 2;
    expected = CPU_COUNT(&set) / std::atoi(want.c_str() + 5);
    if (expected < 1) expected = 1;
  } else {
    expected = std::atoi(want.c_str());
  }
  const int got = omp_get_max_threads();
  const bool reason_ok = argc < 3 || t.reason.find(argv[2]) != std::string::npos;
  std::printf("host GEMM threads: %d (expected %d); reason: %s%s\n", got, expected,
              t.reason.c_str(), reason_ok ? "" : (std::string(" (expected to contain '") + argv[2] + "')").c_str());
  return got == expected && t.threads == got && reason_ok ? 0 : 1;
}
