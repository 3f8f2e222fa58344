// A program that initialises Kokkos itself keeps ownership: cohort's host device must run on the
// program's Kokkos, must not finalise it, and the program's own finalize must not be doubled at
// exit. Exits non-zero on any violation.
#include <Kokkos_Core.hpp>

#include <cstdio>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    auto& dev = cohort::host_device();
    auto a = cohort::Tensor::full({1000}, 2.0, cohort::DType::f32, dev);
    cohort::ops::scale(3.0f, a, a);
    if (cohort::ops::sum(a) != 6000.0f) {
      std::printf("wrong sum under a user-owned Kokkos\n");
      return 1;
    }
    // The user's own Kokkos work still runs alongside cohort's.
    double total = 0;
    Kokkos::parallel_reduce(
        "user", Kokkos::RangePolicy<Kokkos::Serial>(0, 10),
        [](int i, double& s) { s += i; }, total);
    if (total != 45.0) return 1;
  }
  if (!Kokkos::is_initialized()) {
    std::printf("cohort finalised a Kokkos it did not initialise\n");
    return 1;
  }
  Kokkos::finalize();
  std::printf("kokkos ownership OK\n");
  return 0;  // cohort's exit handler must not finalise again
}
