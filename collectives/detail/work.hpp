// A Work that completed when it was created, for the ops every backend finishes at once (the self
// backend, count == 0, ...). The environment readers and timeout resolution are in env.hpp; the
// rank and timeout wording in format.hpp.
#pragma once

#include <memory>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::detail {

// Shared: handing it out allocates nothing.
WorkHandle completed_work();

}  // namespace cohort::comm::detail
