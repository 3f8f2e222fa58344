// The wording every backend's error messages share for ranks and timeouts, so that "who did not
// arrive" reads the same whichever backend reports it.
#pragma once

#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::detail {

// "rank 2" / "ranks 0, 2, 3".
std::string format_ranks(const std::vector<int>& ranks);
// "1500 ms".
std::string format_timeout(Timeout t);

}  // namespace cohort::comm::detail
