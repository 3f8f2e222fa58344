// One broadcast for many tensors (internal): parameters at construction, buffers before forward.
#pragma once

#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::parallel::detail {

// Copies rank 0's contents of `tensors` (any dtypes, same list on every rank) into every rank's
// tensors with ONE broadcast: packed back to back into one byte buffer, on the tensors' device
// when they share one the communicator can take, else on the host. Returns whether this rank's
// tensors were written (false on rank 0, with world size 1, or when there is nothing to send).
// Collective; blocks.
bool broadcast_from_rank0(const std::vector<Tensor>& tensors, comm::Communicator& comm);

}  // namespace cohort::parallel::detail
