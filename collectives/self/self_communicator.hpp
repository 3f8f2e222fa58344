// The self backend: a group of one process. Collectives complete when they are issued, copying
// only where send and recv differ; send/recv to rank 0 (itself) go through an in-process queue.
#pragma once

#include "cohort/collectives/registry.hpp"

namespace cohort::comm::self {

CommunicatorFactory factory();

}  // namespace cohort::comm::self
