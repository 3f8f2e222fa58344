// Pieces every backend shares around Work handles and time: the default timeout, completed Work,
// and the wording of "who did not arrive".
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::detail {

// The communicator default: COHORT_COMM_TIMEOUT_MS if set (a positive integer, else throws naming
// the variable and its value), otherwise cohort::default_timeout() (COHORT_TIMEOUT, 300 s).
Timeout default_timeout_from_env();
// Whether collectives check that every rank issued the same one (fingerprints, op_desc.hpp):
// COHORT_COLLECTIVE_CHECKS=0 turns the check off (to measure its cost), 1 or unset keeps it on;
// any other value throws naming the variable.
bool collective_checks_from_env();
// Whether COHORT_COLLECTIVE_CHECKS is set to 1 explicitly: the opt-in for backends whose check
// costs a collective of its own (nccl: detail/checked.hpp). Invalid values throw as above.
bool collective_checks_requested();
// `t` unless it is kDefaultTimeout, then `fallback`. Throws for other negative values.
Timeout resolve_timeout(Timeout t, Timeout fallback);

// "rank 2" / "ranks 0, 2, 3".
std::string format_ranks(const std::vector<int>& ranks);
// "1500 ms".
std::string format_timeout(Timeout t);

// A Work that completed when it was created (self backend, count == 0, ...). Shared: handing it
// out allocates nothing.
WorkHandle completed_work();

}  // namespace cohort::comm::detail
