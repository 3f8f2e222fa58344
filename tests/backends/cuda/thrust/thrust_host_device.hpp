// "thrust-host": a test device that runs the Thrust path of the CUDA device (common/thrust_ops.hpp)
// on Thrust's CPP system, compiled by g++, so CPU-only CI tests the algorithms the GPU runs. Its
// memory is host memory of its own; the calls Thrust covers go through thrust_ops::run with
// thrust::cpp::par, everything else to the host device. This header names no Thrust type: the
// parity table includes it without the CCCL headers.
#pragma once

#include <cstdint>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/device.hpp"

namespace cohort::testing {

Device& thrust_host_device();

// Whether thrust_ops covers calls of `op` (every case of a covered op is covered).
bool thrust_covers(Op op);

// How many calls of `op` thrust_host_device() has run through Thrust since the program started.
std::uint64_t thrust_calls(Op op);

}  // namespace cohort::testing
