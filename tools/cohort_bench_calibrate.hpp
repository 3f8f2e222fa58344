// cohort-bench's calibration of the cost model (cohort/collectives/cost_model.hpp), and the host
// map it and --model share. Every rank of the job calls these; rank 0 writes and prints.
#pragma once

#include <string>

#include "cohort/collectives/communicator.hpp"
#include "cohort/collectives/process_group.hpp"

namespace cohort::comm {

// Which ranks share a host: every rank's host key (host_key()), all-gathered, then map_hosts,
// as hier groups them. Collective.
HostMap hosts_of(Communicator& c);

// --calibrate FILE (op_only false): both link classes from concurrent 8 B and 4 MiB exchanges,
// then this backend's per-op term; writes FILE. --calibrate-op FILE (op_only true): only the op
// term, against the links of FILE (which must fit this job), updated in FILE. Returns the
// process's exit status (0); errors throw cohort::Error naming the file or setting at fault.
int calibrate(Communicator& c, const std::string& file, bool op_only);

}  // namespace cohort::comm
