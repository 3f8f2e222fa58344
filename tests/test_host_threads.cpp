// The host GEMM's thread count: cores / ranks on this host unless OMP_NUM_THREADS is set.
// Usage: test_host_threads EXPECTED   (EXPECTED: a number, or "cores/N"); exits 1 on mismatch.
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cohort/devices.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  cohort::host_device();  // creating the host device configures the threads
  const std::string want = argv[1];
  int expected = 0;
  if (want.rfind("cores/", 0) == 0) {
    expected = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) / std::atoi(want.c_str() + 6);
    if (expected < 1) expected = 1;
  } else {
    expected = std::atoi(want.c_str());
  }
  const int got = omp_get_max_threads();
  std::printf("host GEMM threads: %d (expected %d)\n", got, expected);
  return got == expected ? 0 : 1;
}
