// Collectives over many tensors at once (internal): every tensor packed back to back into one
// buffer, one collective, unpacked. N batch norms' 3N buffers, or a model's every gradient, cost
// one latency, not one per tensor (broadcasts: one per 16 MiB). DDP broadcasts parameters and
// buffers with it; the Horovod-style helpers (broadcast_parameters, DistributedOptimizer) use it
// too.
#pragma once

#include <cstddef>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::parallel::detail {

// Copies `root`'s contents of `tensors` (any dtypes, same list on every rank) into every rank's
// tensors with one broadcast per kBroadcastPackBytes: packed on the tensors' device when they
// share one the communicator can take, else on the host. Returns whether this rank's tensors were
// written (false on the root, with world size 1, or when there is nothing to send). Collective;
// blocks.
inline constexpr std::size_t kBroadcastPackBytes = std::size_t{16} << 20;
bool broadcast_from(const std::vector<Tensor>& tensors, comm::Communicator& comm, int root = 0);
inline bool broadcast_from_rank0(const std::vector<Tensor>& tensors, comm::Communicator& comm) {
  return broadcast_from(tensors, comm, 0);
}

// Replaces every tensor (all f32, same list on every rank) by its average over the ranks, with
// ONE all-reduce. Collective; blocks.
void average_across_ranks(const std::vector<Tensor>& tensors, comm::Communicator& comm);

}  // namespace cohort::parallel::detail
