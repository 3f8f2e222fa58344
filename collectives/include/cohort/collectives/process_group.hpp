// The process group's view of the launch: rank, world size, local rank, store address. It is
// cohort::LaunchInfo (cohort/core/launch_info.hpp), read from the launchers' variables in one place.
#pragma once

#include <string>

#include "cohort/core/launch_info.hpp"

namespace cohort::comm {

using ProcessGroupInfo = ::cohort::LaunchInfo;

// This process's host as the hier backend and cohort-bench --calibrate see it: COHORT_HOSTID
// when set, else the host name, the boot id and the network namespace (so namespaces on one
// machine count as hosts). Throws naming COHORT_HOSTID when it is set but empty.
std::string host_key();

}  // namespace cohort::comm
