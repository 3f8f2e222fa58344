// The process group's view of the launch: rank, world size, local rank, store address. It is
// cohort::LaunchInfo (cohort/core/launch_info.hpp), read from the launchers' variables in one place.
#pragma once

#include "cohort/core/launch_info.hpp"

namespace cohort::comm {

using ProcessGroupInfo = ::cohort::LaunchInfo;

}  // namespace cohort::comm
