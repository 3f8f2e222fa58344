// The skip rule of the multi-process test programs (conformance, DDP): whether the backend that
// COHORT_COMM names can serve this rank's group in this build, and if not why, so that the
// program exits 77 (ctest: skipped) saying so instead of failing. Header-only: each program
// prints its own "<name>: skipped: ..." line.
#pragma once

#include <string>

#include "cohort/collectives/registry.hpp"

namespace cohort::testing {

// True when `backend` ("auto", or a backend's name) can serve `info`; otherwise false with the
// reason in *why ("not in this build" for a name no factory has).
inline bool comm_backend_serves(const std::string& backend,
                                const cohort::comm::ProcessGroupInfo& info, std::string* why) {
  if (backend == "auto") return true;
  const cohort::comm::CommunicatorFactory* f = nullptr;
  for (const auto& x : cohort::comm::communicator_factories())
    if (x.name == backend) f = &x;
  *why = "not in this build";
  return f != nullptr && f->available(info, why);
}

}  // namespace cohort::testing
