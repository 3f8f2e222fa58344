// The shm backend: all ranks of the group on one host, sharing one POSIX shared-memory segment
// (shm/segment.hpp); ops move forward on the calling thread (shm/engine.hpp).
#pragma once

#include "cohort/collectives/registry.hpp"

namespace cohort::comm::shm {

CommunicatorFactory factory();

}  // namespace cohort::comm::shm
