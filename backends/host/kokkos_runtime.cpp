// Kokkos life cycle. Kokkos must be initialised before the first parallel_for and finalised once,
// after the last; programs that link cohort may also use Kokkos themselves, so cohort initialises
// it lazily only when nobody has, and finalises only what it initialised.
#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <mutex>

#include "host_device.hpp"

namespace cohort::host {
namespace {
void finalize_if_ours() {
  // The program may have finalised Kokkos itself by now; finalising twice is an error in Kokkos.
  if (Kokkos::is_initialized()) Kokkos::finalize();
}
}  // namespace

void ensure_kokkos() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Kokkos::is_initialized()) return;  // the program owns Kokkos
    Kokkos::InitArguments args;
    args.disable_warnings = true;
    Kokkos::initialize(args);
    std::atexit(finalize_if_ours);
  });
}

}  // namespace cohort::host
