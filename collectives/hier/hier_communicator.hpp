// The hierarchical backend ("hier", issue 32): a composition of two existing communicators, not a
// new transport. Ranks on one host (comm::map_hosts, process_group.hpp) form a shm communicator;
// the first rank of each host (its leader) joins a ucx communicator of leaders; a flat ucx
// communicator of every rank carries point-to-point messages between hosts. Each collective runs
// its stages on these:
//
//   allreduce       shm all-reduce on each host -> ucx all-reduce among leaders -> shm broadcast
//   broadcast       shm broadcast on the root's host -> ucx broadcast among leaders -> shm
//                   broadcast on the other hosts
//   allgather       shm all-gather -> ucx all-gather of whole hosts among leaders (padded to the
//                   largest host) -> the leader puts blocks in rank order -> shm broadcast
//   reduce_scatter  the all-reduce above of the whole input, then this rank's block
//   barrier         shm barrier -> ucx barrier among leaders -> shm barrier
//
// Collectives run in issue order on one worker thread of this communicator (each stage waits for
// the one before, under the op's timeout, so no stage waits for ever); the caller gets a Work at
// once. Point-to-point ops go straight to the shm communicator (same host) or the flat ucx one
// (other hosts), so a receive never waits behind a collective. A failed stage leaves the
// communicator unusable, and the error names the stage. Mismatch checks, dead-rank detection and
// the deterministic mode are the stages' own; with deterministic stages the whole sum is
// deterministic, its order fixed (each host, then across hosts).
//
// Selected by name (`--comm hier`, COHORT_COMM=hier) wherever ucx works, and by "auto" when the
// launcher says the job spans several hosts with several ranks on this one.
#pragma once

#include "cohort/collectives/registry.hpp"

namespace cohort::comm::hier {

CommunicatorFactory factory();

}  // namespace cohort::comm::hier
