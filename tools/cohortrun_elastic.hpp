// cohortrun --elastic: the store that outlives every rank, and what a rank's exit means for the
// group (docs/LAUNCH.md, "Elastic training"). The poll loop of cohortrun.cpp asks this room.
//
// One node: cohortrun serves the store in a child process of its own and counts the ranks left
// against MIN itself. Several nodes (--nnodes N): node 0's cohortrun serves the store, the others
// connect to it; no node knows how many ranks the others have left, so the ranks themselves stop
// the job below MIN (ElasticGroup::shrink) and a node's part ends only when none of its ranks is
// left (or started again). The node serving the store must live for the job: a partition's side
// without it cannot decide and stops (no split brain).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

namespace cohort::comm {
class Store;
}

namespace cohortrun {

struct ElasticConfig {
  int min = 0, max = 0;  // --elastic MIN:MAX
  int respawn = 0;       // --elastic-respawn N
  int nnodes = 1, node_rank = 0;
  std::string addr;  // --master-addr / --master-port: where the store is served
  int port = 0;
};

class ElasticLauncher {
 public:
  // Node 0 forks the store's process (call it before cohortrun has any thread; `child_mask`: the
  // signal mask to restore there); every node then connects, node k > 0 retrying for 60 s while
  // node 0 starts. Exits cohortrun with a message when the store cannot be had.
  ElasticLauncher(const ElasticConfig& c, const sigset_t& child_mask);
  ~ElasticLauncher();

  // In a rank's child process before exec: what the rank needs to join (COHORT_STORE_SERVED,
  // COHORT_ELASTIC, its incarnation, and whether it joins a running group).
  void set_rank_env(int incarnation) const;

  enum class Next { ended, go_on, respawn, stop_job };
  // A rank ended (not while cohortrun stops the job): marks it gone in the store, so that the
  // survivors need not wait for it, says so, and returns what to do. `alive`: this node's ranks
  // still running. ended: an exit 0 (or a joiner the group finished without), nothing to do.
  Next on_exit(int rank, int incarnation, int status, const std::string& how, pid_t pid, int alive);

  // After the last rank of this node: node k > 0 marks itself done; node 0 keeps the store up
  // until every node has (at most 15 s: a node cut off never will), then stops it.
  void finish();

 private:
  bool store_has(const std::string& key);  // false also when the store cannot be reached
  ElasticConfig c_;
  pid_t store_pid_ = -1;
  std::shared_ptr<cohort::comm::Store> store_;
};

}  // namespace cohortrun
