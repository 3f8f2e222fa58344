// What every backend reads from the environment, and the timeout rule they share: the
// communicator's default timeout, whether the same-collective check runs, and how a per-call
// timeout resolves against the default. One place, so that every backend spells the variables
// and their errors the same way.
#pragma once

#include <cstdint>

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
// A size in bytes from the variable `name` (digits, optionally followed by k, M or G for KiB,
// MiB, GiB), `fallback` when unset or empty; a value that is not a size in [lo, hi] throws,
// naming `backend`, the variable, its value and the range.
std::uint64_t bytes_from_env(const char* name, std::uint64_t fallback, std::uint64_t lo,
                             std::uint64_t hi, const char* backend);
// Whether a waiting rank gives its core away at once (sched_yield, then sleeps) instead of
// spinning first (detail/backoff.hpp): COHORT_YIELD_WHEN_IDLE=1 or 0 decides, as Open MPI's
// mpi_yield_when_idle; unset or empty, it yields when this host runs more ranks than this
// process may use cores (`local_ranks` > usable_cpus()). The override is for hosts that share
// cores the launcher cannot see: network-namespace hosts on one machine, containers with CPU
// quotas. Any other value throws naming the variable.
bool yield_when_idle(int local_ranks);
// `t` unless it is kDefaultTimeout, then `fallback`. Throws for other negative values.
Timeout resolve_timeout(Timeout t, Timeout fallback);

}  // namespace cohort::comm::detail
