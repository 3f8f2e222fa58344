// A communicator that checks, before each collective, that every rank is issuing the same one:
// for backends whose ops carry no fingerprint of their own (nccl; shm and ucx check inside their
// protocols). PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL does the same for NCCL.
//
// Before each collective every rank's description of it (OpDesc: kind, count, dtype, reduction,
// root, sequence number; 32 bytes) is all-gathered through the inner communicator, on the host or,
// for one that takes only device memory, through `staging` (comm::allgather_host). If they differ,
// every rank throws the same error, the one shm and ucx raise ("collective mismatch: rank 0
// issued allreduce #2 (1000 x f32, sum) where rank 1 issued ..."), before the inner communicator
// sees the op, and every later call throws it again: no rank hangs in a collective its peers
// never joined, no sum mixes different buffers. Point-to-point ops pass unchecked.
//
// The cost: one extra blocking all-gather per collective (for nccl also two small copies and a
// wait on the GPU), which serialises work the backend would overlap. A debugging aid, opt-in for
// nccl: COHORT_COLLECTIVE_CHECKS=1 (docs/COLLECTIVES.md).
#pragma once

#include <memory>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"

namespace cohort::comm::detail {

std::unique_ptr<Communicator> make_checked(std::shared_ptr<Communicator> inner, Device* staging);

}  // namespace cohort::comm::detail
