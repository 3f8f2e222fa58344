// The device registry: every backend built into this library, listed by hand behind its build
// flag, the portable one last. No self-registering statics: linkers drop them from static
// libraries, and a list you can read is a list you can grep.
#include <sstream>

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
  return all;
}

Device& device(const std::string& spec) { return select_device(device_factories(), spec); }

Device& host_device() { return select_device(device_factories(), "host"); }

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

}  // namespace cohort
