// The one default for every wait in cohort: connecting to the store and rendezvous, collectives
// and their Work handles, the data loader's next batch. Nothing waits forever; each wait also
// takes its own override (the `timeout` argument of a collective, DataLoaderOptions::timeout,
// ...), and COHORT_COMM_TIMEOUT_MS, when set, overrides this default for communicators and
// stores alone.
#pragma once

#include <chrono>

namespace cohort {

// COHORT_TIMEOUT in seconds (a positive number, fractions allowed: "0.5", "90", "1800"), else
// 300 s. A malformed value throws cohort::Error naming the variable and the value.
std::chrono::milliseconds default_timeout();

}  // namespace cohort
