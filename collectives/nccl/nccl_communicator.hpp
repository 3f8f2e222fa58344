// The nccl backend: a Communicator over NCCL for groups in which every rank drives its own GPU.
// Buffers are device memory only (capabilities(): device_memory true, host_memory false); ops run
// on the communicator's own CUDA stream, ordered after the work already queued on the CUDA
// device's compute stream (an event, never a device-wide synchronize), and each Work is a CUDA
// event. The NCCL unique id travels through the Store under "nccl/<n>/". No NCCL or CUDA type
// appears in this header (docs/COLLECTIVES.md, "The nccl backend").
#pragma once

#include "cohort/collectives/registry.hpp"

namespace cohort::comm::nccl {

// name "nccl", gpu_memory: what "auto" picks for GPU training (never for host training).
// With COHORT_COLLECTIVE_CHECKS=1 the communicator is wrapped by detail/checked.hpp (every
// collective first checks that all ranks issue the same one). available() is true when this
// rank has a GPU of its own: at least one GPU is visible and there are at least as many as ranks
// on this host (or CUDA_VISIBLE_DEVICES narrows each rank's view, which create() checks);
// why_not says which of those fails. create() blocks
// until every rank has joined (at most the communicator timeout, COHORT_COMM_TIMEOUT_MS or
// COHORT_TIMEOUT), fails before calling NCCL when two ranks of one host would share a GPU, and
// needs a Store unless the group has one rank.
CommunicatorFactory factory();

}  // namespace cohort::comm::nccl
