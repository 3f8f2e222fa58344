// "thrust-host": a test device that runs the CUDA device's executor (backends/cuda/thrust_exec.hpp)
// on Thrust's CPP system, compiled by g++, so CPU-only CI runs every shared op family through the
// algorithms the GPU runs. Its memory is host memory of its own; GEMMs go to the host device (as
// the CUDA device's go to cuBLAS). This header names no Thrust type: the
// parity table includes it without the CCCL headers.
#pragma once

#include <cstdint>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/device.hpp"

namespace cohort::testing {

Device& thrust_host_device();

// Whether calls of `op` launch Thrust algorithms here: every op but the two GEMMs, whose products
// are the device GEMM's (the k == 0 edge case aside).
bool thrust_covers(Op op);

// How many calls of `op` thrust_host_device() has run through Thrust since the program started.
std::uint64_t thrust_calls(Op op);

// How many work items the for_each launches of `op`'s calls have run in all (which decomposition
// a family chose: an item per element or per row, stages).
std::uint64_t thrust_items(Op op);

// How many GEMMs calls of `op` have handed to the host device's GEMM (cuBLAS's place), a batched
// GEMM counting one per batch entry.
std::uint64_t thrust_gemms(Op op);

// How many Thrust algorithms (for_each, transform, fill_n, generate) every op has launched in all
// since the program started: each is a kernel launch on a GPU (a staged op launches several).
std::uint64_t thrust_launches();

}  // namespace cohort::testing
