// The job's communicator, made once by main() for every test case.
#pragma once

#include <memory>

#include "cohort/collectives/communicator.hpp"

namespace ddp_test {
std::shared_ptr<cohort::comm::Communicator> shared_comm();
inline cohort::comm::Communicator& comm() { return *shared_comm(); }
}  // namespace ddp_test
