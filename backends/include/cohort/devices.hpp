// Choosing a compute device. The backends compiled into this build are listed by hand in
// backends/registry.cpp (CUDA first when built, the host last); see docs/ARCHITECTURE.md.
#pragma once

#include <string>
#include <vector>

#include "cohort/core/device.hpp"

namespace cohort {

// Every backend built into this library, best first.
const std::vector<DeviceFactory>& device_factories();

// The device for `spec`: "host", "cuda", "cuda:1"; "" or "auto" means COHORT_DEVICE when set,
// else the best available. Throws cohort::Error for unknown or unavailable devices, listing the
// known ones and why a device is unavailable. The returned device lives until the program ends.
Device& device(const std::string& spec = "");

// The host device, always available.
Device& host_device();

// One line per backend: name, device count, and why a backend has none ("cuda: 0 (no CUDA-capable
// device is detected)"), for tools and error messages.
std::string describe_devices();

}  // namespace cohort
