// Elastic membership: the group of ranks a data-parallel job trains with, which shrinks when ranks
// die and goes on with the survivors (torchft's and Horovod Elastic's model, not torchrun's
// restart-the-world). The Trainer drives it (TrainerOptions::elastic); docs/LAUNCH.md, "Elastic
// training", has the rules and a real run.
//
// Contracts:
//  - The store must outlive every rank: cohortrun --elastic serves it (COHORT_STORE_SERVED=1; with
//    several nodes, node 0's cohortrun) and marks each rank that exits
//    ("elastic/gone/<rank>.<incarnation>", its death time), so the survivors need not wait for it.
//    Without cohortrun --elastic the constructor refuses, saying so. The group writes
//    "elastic/finished" (its rank 0, at a normal end) and "elastic/stopped" (below MIN, a poison
//    batch), which the launchers and waiting joiners read.
//  - Memberships are numbered (the membership epoch, from 0). shrink() is the one way from one to
//    the next: every survivor checks in under the current epoch with the steps it has committed;
//    the first to check in decides once every member has checked in or is known gone, or
//    `settle` after it checked in; the decision is written once to the store, so every rank reads
//    the same one. A rank that checks in after the decision, or was left out of it, is refused:
//    it throws, naming the epoch, and never trains with the new group (no split brain: a
//    partition's side without the store cannot decide, and stops).
//  - Ranks keep their launch number (RANK) for life; their rank in a group is their position in
//    members() (ascending launch ranks).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"

namespace cohort::comm {
class Store;
}

namespace cohort::parallel {

struct ElasticOptions {
  int min_ranks = 1;    // fewer survivors: stop (the job fails, the checkpoint is left as it is)
  int max_ranks = 0;    // 0: the launch's world size
  std::string backend;  // the communicator of every membership (registry name)
  const Device* device = nullptr;  // what the program trains on ("auto" goes by it)
  std::string membership_log;      // JSON Lines, one per change (rank 0 of the new group)
  std::string replay_log;          // a membership log to apply at its steps (replay)
  // How long the deciding rank waits for a member that neither checked in nor is known gone (a
  // stopped process, a host cut off): after this it is declared dead.
  std::chrono::milliseconds settle{10000};
  // What a joining rank must match (the program's choice: its model, batch, precision, range...):
  // a joiner whose identity differs from the group's is refused at the join, by name, before any
  // collective, and the group goes on unharmed. A joiner from another job is refused earlier, by
  // the store (its job token).
  std::string identity;
  // A poison batch: when the group loses ranks this many times in a row without completing a
  // step in between (the same step in flight each time), the Trainer names the batches involved
  // and stops the job instead of going round again (0: never).
  int max_step_failures = 3;
  // What a change of group keeps. false (the default): the global batch: every step has the
  // samples the full group's step would have, split among the ranks there are (more per rank
  // when fewer); the learning rate is unchanged. true: each rank's batch: the global batch is
  // batch size x ranks, the rest of the epoch is dealt out in those (more steps when fewer
  // ranks), and the learning rate is scaled by ranks / launched ranks (the linear scaling rule).
  bool keep_rank_batch = false;
};

// "MIN:MAX" or "N" (= N:N) into options.min_ranks / max_ranks; throws naming `flag`.
void parse_elastic_range(const std::string& spec, const std::string& flag, ElasticOptions& o);

// One change of membership, as the log records it.
struct MembershipChange {
  std::int64_t epoch = 0;                     // the new membership's number
  std::int64_t step = 0;                      // global steps done when the new group starts
  std::vector<int> old_members, new_members;  // launch ranks
  std::vector<std::int64_t> steps;            // the steps each new member had committed
  int root = 0;                               // the new group's rank whose state every rank takes
  std::string reason;
  // Timings (this rank): death to the failure seen here (-1: unknown), the agreement, building
  // the new communicator.
  double detect_s = -1, agree_s = 0, build_s = 0;
  // A loss only: how many losses in a row (this one included) had the same step in flight, and
  // their reasons ("try 1: ...; try 2: ..."). Not in the log.
  int tries = 0;
  std::string tries_history;
  std::string json() const;  // one line of the membership log
};

// A membership log read back (--replay-membership): the changes in order.
std::vector<MembershipChange> read_membership_log(const std::string& path);

class ElasticGroup {
 public:
  // Joins the launch's group as membership 0 (every launched rank), building its communicator.
  // Collective over the launched ranks.
  explicit ElasticGroup(ElasticOptions options);
  ~ElasticGroup();

  std::shared_ptr<comm::Communicator> communicator() const { return comm_; }
  int launch_rank() const { return launch_rank_; }
  int launch_world() const { return launch_world_; }
  const std::vector<int>& members() const { return members_; }
  std::int64_t membership_epoch() const { return epoch_; }
  const ElasticOptions& options() const { return opt_; }
  const std::vector<MembershipChange>& changes() const { return changes_; }

  // The membership change `reason` calls for, agreed by every survivor through the store, and
  // the new group's communicator (communicator() afterwards). `committed` is the global steps
  // this rank has applied. Throws cohort::Error when this rank is refused (it checked in too
  // late: the others went on without it), when fewer than min_ranks are left (naming them), or
  // when every member checked in (nobody is gone: the failure was not a death, and `reason` is
  // rethrown as it was). Collective over the survivors.
  // Pure sharding (ZeRO: a lost rank's shard of the state is gone with it): `restart`, when
  // given, runs on every survivor once the new communicator is built (it may use it: a sharded
  // checkpoint's load) and returns the global step the new group goes on from, which the change
  // records (its step, every member's, root 0) in place of the furthest member's, so that a
  // replay changes the group at that step.
  MembershipChange shrink(const std::string& reason, std::int64_t committed,
                          const std::function<std::int64_t(const MembershipChange&)>& restart = {});

  // --replay-membership: the change of the log that starts at global step `step` (nullptr:
  // none). The Trainer makes the ranks it leaves out leave() and the others shrink().
  const MembershipChange* replay_at(std::int64_t step) const;
  // This rank leaves the group for good (marks itself gone, so nobody waits for it).
  void leave();
  // The job stops (`why`): cohortrun and waiting joiners read it from the store and neither
  // start nor wait for ranks any more. The caller then throws.
  void stop(const std::string& why);

  // Growing back (cohortrun --elastic-respawn): a rank cohortrun starts again joins at a step
  // boundary. grow_due(b): whether the group grows at boundary b (b global steps done); call it
  // at every boundary on every rank (rank 0 schedules a growth for the next boundary when a
  // joiner is queued; one store read per call on the others). grow(b): the new group, members
  // first, then the joiners; its rank 0 is the old one, whose state the joiners take. Collective.
  // When every joiner queued was refused (ElasticOptions::identity), nothing changes: the result
  // has new_members == old_members and the same communicator.
  bool grow_due(std::int64_t boundary);
  MembershipChange grow(std::int64_t boundary);
  // This process was started to join a running group (its constructor waited to be admitted).
  bool joined() const { return joined_; }
  // Ranks that die are started again and join (cohortrun --elastic-respawn).
  bool grows() const { return grow_enabled_; }

 private:
  ElasticOptions opt_;
  std::shared_ptr<comm::Store> store_;
  std::shared_ptr<comm::Communicator> comm_;
  int launch_rank_ = 0, launch_world_ = 1;
  std::string host_;
  std::vector<int> members_;
  std::int64_t epoch_ = 0;
  std::vector<MembershipChange> changes_;
  std::vector<MembershipChange> replay_;
  void build(std::int64_t epoch);
  // shrink's parts: the decider's wait and record, and every member's reading of it.
  void decide_shrink(const std::string& e, std::int64_t committed, std::chrono::milliseconds wait);
  MembershipChange read_decision(const std::string& decided) const;
  void log_change(const MembershipChange& c);
  std::string gone_key(int launch_rank);  // "gone/<rank>.<incarnation>"
  int incarnation_ = 0;  // how many times cohortrun started this launch rank before
  bool joined_ = false, grow_enabled_ = false, grow_asked_ = false;
  std::int64_t admitted_ = 0;  // joiners admitted so far (the "joins" queue's position)
  // The watcher: polls "news" (a counter the launcher bumps when a rank exits, and a rank when it
  // checks in to agree on a new group) every 25 ms, and declares such members dead to the
  // communicator (Communicator::declare_dead), so a survivor waiting for one fails at once rather
  // than at the backend's own detection (ucx: up to seconds).
  std::mutex mu_;  // comm_ and members_ against the watcher
  std::atomic<bool> stop_{false};
  std::thread watcher_;
  void watch();
};

}  // namespace cohort::parallel
