// The ucx backend: a Communicator over UCP tagged messages, for groups spread over many hosts
// (here: tcp, sysv, posix and cma transports; InfiniBand and CUDA memory where UCX has them).
// Worker addresses are exchanged through the Store under "ucx/"; each communicator runs a
// progress thread that owns its UCP worker (docs/UCX.md). No UCX type appears in this header.
#pragma once

#include "cohort/collectives/registry.hpp"

namespace cohort::comm::ucx {

// name "ucx", score 10: below shm and self, which serve one host better; the choice for
// multi-host groups. available() is true when the group has between 1 and 65536 ranks and UCX
// can create a context in this process (otherwise why_not gets UCX's reason). create() blocks
// until every rank of the group has published its worker address (at most the default timeout,
// COHORT_COMM_TIMEOUT_MS or 300 s), and needs a Store unless the group has one rank.
CommunicatorFactory factory();

}  // namespace cohort::comm::ucx
