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

// The host device's thread count for its GEMMs (OpenMP) and why it is that, e.g.
// "2 CPUs in the affinity mask / 1 rank on this host (default)" or "OMP_NUM_THREADS=1". Decided
// once per process, when the host device is created (this creates it); the rules are in
// docs/LAUNCH.md. Examples print it as their first line.
struct HostThreads {
  int threads = 1;
  std::string reason;
};
const HostThreads& host_threads();

// torch.set_num_threads: fixes the host GEMM's thread count at `threads` (>= 1) from now on, for
// the calling thread's GEMMs; the contention governor stops adapting it, and host_threads()
// reports it with the reason "set_host_threads(N)". What benchmarks call before they measure.
void set_host_threads(int threads);

// Whether the host computes bf16 natively: oneDNN's instruction set here has AVX-512 BF16 or AMX.
// Autocast bf16 on the host (cohort/core/autocast.hpp) runs its ops in bf16 when true, in f32 with
// a notice when false; `why` (when given) gets the reason when false. f16 never runs on the host.
bool host_bf16_supported(std::string* why = nullptr);

// One line per backend: name, device count, and why a backend has none ("cuda: 0 (no CUDA-capable
// device is detected)"), for tools and error messages.
std::string describe_devices();

}  // namespace cohort
