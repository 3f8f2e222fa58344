// The conformance suite runs as N real processes (under cohortrun), one per rank, on the backend
// COHORT_COMM names. Every rank runs the same test cases in the same order, so they issue the same
// collectives; checks never skip an op (CHECK, not REQUIRE, around communication).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cohort/collectives/registry.hpp"

namespace conformance {

extern cohort::comm::Communicator* communicator;        // the suite's communicator
extern std::shared_ptr<cohort::comm::Store> store;  // the job's store, for extra communicators
extern cohort::comm::ProcessGroupInfo info;
extern std::string backend;                      // the COHORT_COMM being tested

// A new communicator of the same backend over a fresh key prefix (collective: every rank calls it).
std::unique_ptr<cohort::comm::Communicator> make_communicator(const std::string& prefix);

// The barrier case of both suites (conformance.cpp): the last rank arrives 300 ms late, and no
// other rank may leave its barrier before 100 ms have passed.
void check_barrier_waits_for_last_rank();

}  // namespace conformance
