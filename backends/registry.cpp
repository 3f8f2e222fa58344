// The device registry: every backend built into this library, listed by hand behind its build
// flag, the portable one last. No self-registering statics: linkers drop them from static
// libraries, and a list you can read is a list you can grep.
#include <sstream>

#include "cohort/backend/dispatch.hpp"
#include "cohort/backend/routes.hpp"
#include "cohort/devices.hpp"
#include "host/host_device.hpp"
#if COHORT_HAVE_CUDA
#include "cuda/cuda_device.hpp"
#endif

namespace cohort {

const std::vector<DeviceFactory>& device_factories() {
  static const std::vector<DeviceFactory> all = {
#if COHORT_HAVE_CUDA
      cuda::factory(),
#endif
      host::factory(),
  };
  // Ops a device does not support run on the host (cohort/backend/dispatch.hpp). Set here, where
  // every device lookup passes, rather than by a static object (see the file comment).
  static const bool fallback_set = [] {
    dispatch::set_fallback_device(all.back().get(0));
    return true;
  }();
  (void)fallback_set;
  return all;
}

Device& device(const std::string& spec) {
  return select_device(device_factories(), spec, launcher_local_rank());
}

Device& host_device() { return select_device(device_factories(), "host"); }

const HostThreads& host_threads() {
  host_device();  // its creation decides the count
  return host::configure_threads();
}

bool host_bf16_supported(std::string* why) {
  return host::bf16_supported(why);
}

void set_host_threads(int threads) {
  host_device();
  host::set_threads(threads);
}

std::string describe_devices() {
  std::ostringstream os;
  for (const auto& f : device_factories()) {
    std::string why;
    const int n = f.count(&why);
    os << f.name << ": " << n << (n == 1 ? " device" : " devices");
    if (n == 0 && !why.empty()) os << " (" << why << ")";
    os << "\n";
  }
  return os.str();
}

std::vector<DeviceRoutes> op_routes() {
  return {
#if COHORT_HAVE_CUDA
      cuda::op_routes(),
#endif
      host::op_routes(),
  };
}

}  // namespace cohort
