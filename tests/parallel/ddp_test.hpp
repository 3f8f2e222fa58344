// The job's communicator, made once by main() for every test case.
#pragma once

#include <memory>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"

namespace ddp_test {
std::shared_ptr<cohort::comm::Communicator> shared_comm();
inline cohort::comm::Communicator& comm() { return *shared_comm(); }
// Where the test models and batches live: COHORT_TEST_DEVICE ("host" when unset; "cuda" for the
// gpu-labelled entries, each rank on its local GPU, or all on one GPU when there is one).
cohort::Device& test_device();
}  // namespace ddp_test
