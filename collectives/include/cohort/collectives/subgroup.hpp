// A communicator over some ranks of another (torch.distributed.new_group's role), built from the
// parent's point-to-point ops alone: no store, no rendezvous, any backend, and it follows the
// parent it is made from (made anew when the parent is replaced, as elastic training does).
//
// What it is for: the small groups of hybrid sharding (DDPOptions::shard_group_size: a shard
// group of consecutive ranks, a replica group of equal shard indices), a few ranks each. Every
// collective is "direct": each member exchanges its part with every other member at once (n - 1
// sends and receives, no chains), so each rank sends and receives (n - 1) x count elements for
// allgather and reduce_scatter's chunks, and allreduce is an allgather followed by a local
// reduction: (n - 1) x count each way, which for 2 ranks is a ring all-reduce's traffic and
// beyond a few ranks grows linearly (use the parent for large groups).
//
// Contracts, beyond Communicator's:
//  - Reductions combine the members' contributions in member order 0..n-1 on every member
//    (detail/reduce.hpp's arithmetic), so every member gets the same bits, whichever backend the
//    parent is: a sum over a subgroup is deterministic.
//  - Construction is local: every member must pass the same `ranks` (the parent's ranks,
//    ascending or not: their order is the subgroup's rank order) and `id`; the parent's rank must
//    be among them. `id` in [0, 63] keeps the subgroup's messages apart from other subgroups of
//    the same parent: it owns the parent's point-to-point tags [0x800000 + id * 0x10000,
//    0x800000 + (id + 1) * 0x10000); the subgroup's own send/recv take tags below 0xffff.
//  - Collectives complete in issue order (a later one's test() stays false until the earlier
//    ones are done); failures and timeouts are the parent's, naming the parent's ranks.
#pragma once

#include <memory>
#include <vector>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm {

// Throws cohort::Error naming the argument for an empty or repeated rank list, a rank outside the
// parent, a parent rank that is not a member, or an id outside [0, 63].
std::shared_ptr<Communicator> make_subgroup(std::shared_ptr<Communicator> parent,
                                            std::vector<int> ranks, int id);

}  // namespace cohort::comm
