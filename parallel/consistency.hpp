// The same-model check DistributedDataParallel runs at construction (internal).
#pragma once

#include "cohort/collectives/communicator.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::parallel::detail {

// Collective. Returns when every rank's `model` has the same parameter names and shapes (one
// all-gather of a 64-bit hash); otherwise every rank gathers every description and throws the
// same cohort::Error naming the first differing parameter, both shapes and the rank, so no rank
// is left waiting in a later collective and the communicator stays usable.
void check_same_parameters(const nn::Module& model, comm::Communicator& comm);

}  // namespace cohort::parallel::detail
