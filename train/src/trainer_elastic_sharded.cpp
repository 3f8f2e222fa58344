// Elastic training with ZeRO (TrainerOptions::elastic over a DistributedDataParallel with
// zero_stage >= 1), pure sharding: a lost rank's shard of the optimizer state (and at stage 3 of
// the parameters) is gone with it, so the survivors go back to the newest complete sharded
// checkpoint (checkpoint_dir/sharded), resharded onto the new group, and go on from its step;
// the steps after it are trained again by the new group. The membership log records that step,
// so a replay (--replay-membership) changes the group there, from the same checkpoint, and ends
// bit for bit where the run with the failure did. With hybrid sharding (DDPOptions::
// shard_group_size) a lost rank's chunk usually lives on in a replica: when every shard of the old
// split has a survivor and the survivors are at one step, its holders send their shard files over
// the new group, every survivor stages the old split's checkpoint in /dev/shm from them, and
// loads it resharded exactly as it would the newest checkpoint: no step is lost and nothing is
// read from disk. The rest of elastic training is trainer_elastic.cpp.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cohort/train/sharded_checkpoint.hpp"
#include "cohort/train/trainer.hpp"
#include "elastic_bytes.hpp"
#include "trainer_loop.hpp"

namespace cohort::train {

bool Trainer::elastic_reshards() const {
  return options_.elastic && ddp_ && ddp_->options().zero_stage > 0;
}

void Trainer::elastic_first_checkpoint(data::DataLoader& train) {
  if (!elastic_reshards() || has_sharded_checkpoint(checkpoint_file_)) return;
  // Before the first step the group can lose a rank too: its state is this one.
  elastic_epoch_loader(train);
  save_checkpoint_now(train, epochs_done_, 0, EpochResult{}, 0, true);
  if (is_lead())
    std::printf(
        "[elastic] ZeRO stage %d: the starting state saved to %s, for a lost rank's shard "
        "to be rebuilt from until the first checkpoint\n",
        ddp_->options().zero_stage, checkpoint_file_.c_str());
}

std::vector<int> Trainer::elastic_replica_holders(const parallel::MembershipChange& change,
                                                  std::string* why) const {
  if (!ddp_->replica_communicator()) {
    *why = "no replicas (shard_group_size)";
    return {};
  }
  const int s = ddp_->shard_communicator().size();
  for (const std::int64_t v : change.steps)
    if (v != change.steps.front()) {
      *why = "the survivors are at different steps (a step's update landed on some shards only)";
      return {};
    }
  std::vector<int> holders(static_cast<std::size_t>(s), -1);
  for (std::size_t i = 0; i < change.new_members.size(); ++i) {
    const auto at =
        std::find(change.old_members.begin(), change.old_members.end(), change.new_members[i]);
    if (at == change.old_members.end()) continue;  // a joiner holds nothing
    const auto k = static_cast<std::size_t>((at - change.old_members.begin()) % s);
    if (holders[k] < 0) holders[k] = static_cast<int>(i);
  }
  for (std::size_t k = 0; k < holders.size(); ++k)
    if (holders[k] < 0) {
      *why = "every replica of shard " + std::to_string(k) + " is gone";
      return {};
    }
  return holders;
}

void Trainer::elastic_gather_replicas(const std::string& dir, const std::vector<int>& holders,
                                      const data::DataLoader& train, const EpochResult& r,
                                      double loss_sum) {
  comm::Communicator& c = *options_.elastic->communicator();
  const int me = ddp_->shard_communicator().rank(), n = static_cast<int>(holders.size());
  const bool mine = holders[static_cast<std::size_t>(me)] == c.rank();
  // The survivors' loss sums averaged over the new group: the same survivors at the same step
  // in the replay.
  const TrainingProgress p = progress_now(train, epochs_done_, r.steps, r, loss_sum, &c);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const ShardedSnapshot snap = snapshot_shard_locally(dir, *ddp_, opt_, sched_, p, 1.0, mine);
  for (int k = 0; k < n; ++k) {
    const int root = holders[static_cast<std::size_t>(k)];
    std::vector<std::uint8_t> blob;
    if (root == c.rank()) blob = detail::read_bytes(write_shard_file(snap, dir));
    blob = detail::broadcast_blob(c, std::move(blob), root);
    if (root != c.rank())
      detail::write_bytes(
          dir + "/shard-" + std::to_string(k) + "-of-" + std::to_string(n) + ".safetensors",
          blob.data(), blob.size());
  }
  detail::write_bytes(dir + "/index.json", reinterpret_cast<const std::uint8_t*>(snap.index.data()),
                      snap.index.size());
}

parallel::MembershipChange Trainer::elastic_reshard(
    data::DataLoader& train, std::int64_t epoch, EpochResult& r, double& loss_sum,
    const std::string& why, bool planned, std::chrono::steady_clock::time_point& t_state) {
  parallel::ElasticGroup& group = *options_.elastic;
  // The save in flight: a lost rank never writes its shard, so rank 0 stops waiting for it (a
  // save whose shards are all there still publishes). A replayed change comes right after its
  // step's save, which every rank (the leaving ones too) completes first.
  if (!planned) writer_.give_up_missing_shards();
  try {
    writer_.wait();
  } catch (const std::exception& e) {
    if (planned) throw;
    std::fprintf(stderr, "[elastic] rank %d: the checkpoint in flight is dropped: %s\n",
                 group.launch_rank(), e.what());
  }
  const std::int64_t replayed_at = global_step_;
  elastic_from_replicas_ = false;
  const parallel::MembershipChange c =
      group.shrink(why, global_step_, [&](const parallel::MembershipChange& change) {
        t_state = std::chrono::steady_clock::now();
        std::string why_not;
        const std::vector<int> holders = elastic_replica_holders(change, &why_not);
        if (!holders.empty()) {
          // Hybrid sharding: the old split's shards from live replicas, before the DDP moves.
          const std::string dir = "/dev/shm/cohort-elastic-replicas-" + std::to_string(::getpid());
          struct Cleanup {
            std::string dir;
            ~Cleanup() {
              std::error_code ec;
              std::filesystem::remove_all(dir, ec);
            }
          } cleanup{dir};
          with_context(
              "elastic: hybrid sharding: rebuilding the lost rank's chunk from its "
              "replicas (each shard's file from a survivor holding it)",
              [&] { elastic_gather_replicas(dir, holders, train, r, loss_sum); });
          elastic_take_group();
          ddp_->rebind(group.communicator(), change.root);
          resume(dir);
          elastic_from_replicas_ = true;
          return resumed_.global_step;
        }
        if (ddp_->replica_communicator() && group.communicator()->rank() == 0)
          std::printf(
              "[elastic] hybrid sharding: no live replica to rebuild from (%s); the "
              "newest sharded checkpoint instead\n",
              why_not.c_str());
        elastic_take_group();
        ddp_->rebind(group.communicator(), change.root);
        const CheckpointLoad got = with_context(
            "elastic: ZeRO stage " + std::to_string(ddp_->options().zero_stage) +
                " lost the shard of a rank that is gone; rebuilding it from the newest sharded "
                "checkpoint in " +
                checkpoint_file_,
            [&] { return resume(checkpoint_file_); });
        return got.progress.global_step;
      });
  COHORT_CHECK(resumed_.epoch == epoch - 1, "elastic: the newest complete sharded checkpoint in ",
               checkpoint_file_, " is of global step ", resumed_.global_step, " in epoch ",
               resumed_.epoch + (resumed_.step_in_epoch > 0 ? 1 : 0),
               ", and the group is in epoch ", epoch,
               ": ZeRO's lost shard can be rebuilt only from a checkpoint of this epoch "
               "(or the previous one's end)");
  COHORT_CHECK(!planned || resumed_.global_step == replayed_at,
               "elastic: the replayed change at "
               "global step ",
               replayed_at,
               " needs the sharded checkpoint of that step, and the "
               "newest in ",
               checkpoint_file_, " is of step ", resumed_.global_step,
               " (replay with the failed run's --checkpoint-every, "
               "TrainerOptions::checkpoint_every_steps)");
  r.steps = elastic_take_progress(train, epoch, r, loss_sum);
  // The rest of the epoch from that step for the new group: its global batches split among the
  // ranks there are (elastic_recover regroups the loader there).
  return c;
}

std::int64_t Trainer::elastic_take_progress(data::DataLoader& train, std::int64_t epoch,
                                            EpochResult& r, double& loss_sum) {
  resume_checked_ = true;  // the group's own checkpoint: saved by another number of ranks
  r.grad_norm = 0;
  r.nonfinite_grad_norms = 0;
  r.skipped_steps = 0;
  loss_sum = 0;
  return apply_resume(train, epoch, r, loss_sum);
}

void Trainer::elastic_grow_sharded(data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                                   double& loss_sum) {
  parallel::ElasticGroup& group = *options_.elastic;
  const std::int64_t boundary = global_step_;
  const auto t0 = std::chrono::steady_clock::now();
  // The group's state at the boundary, published before any rank of the larger group reads it
  // (rank 0's wait includes the publication, and it takes part in the collectives below only
  // after it). A save of this very step already in flight is waited for, not repeated.
  try {
    writer_.wait();
  } catch (const std::exception&) {
    sharded_saved_step_ = -1;  // its error comes again with the save below, if that fails too
  }
  if (sharded_saved_step_ != boundary)
    save_checkpoint_now(train, epoch - 1, r.steps, r, loss_sum, true);
  const double saved_s = seconds_since(t0);
  // Stage 3: the joiners' constructors take rank 0's whole values, which rebind() broadcasts
  // from inside this (stages 1-2 hold them whole anyway).
  parallel::DistributedDataParallel::FullParams whole = ddp_->summon_full_params(false);
  const parallel::MembershipChange c = group.grow(boundary);
  if (c.new_members.size() == c.old_members.size()) return;  // every joiner refused
  const auto t1 = std::chrono::steady_clock::now();
  elastic_take_group();
  ddp_->rebind(group.communicator(), 0);
  { const auto done = std::move(whole); }
  with_context("elastic: ZeRO stage " + std::to_string(ddp_->options().zero_stage) +
                   " growing back: loading the group's sharded checkpoint of step " +
                   std::to_string(boundary) + " resharded onto " + std::to_string(comm_->size()) +
                   " ranks",
               [&] { resume(checkpoint_file_); });
  COHORT_CHECK(resumed_.global_step == boundary, "elastic: growing back at global step ", boundary,
               " loaded the sharded checkpoint of step ", resumed_.global_step, " from ",
               checkpoint_file_, " (another run writing into the same directory?)");
  r.steps = elastic_take_progress(train, epoch, r, loss_sum);
  opt_.zero_grad();
  train.regroup(comm_->rank(), comm_->size(), false, r.steps * options_.accumulation);
  if (comm_->rank() == 0) {
    std::printf(
        "[elastic] membership %lld at step %lld: ranks -> %d (%s); agreement %.3f s, new "
        "communicator %.3f s; ZeRO stage %d: the state went to the joiners as the "
        "sharded checkpoint of this step (saved in %.3f s), resharded and loaded by every "
        "rank in %.3f s\n",
        static_cast<long long>(c.epoch), static_cast<long long>(c.step),
        static_cast<int>(c.new_members.size()), c.reason.c_str(), c.agree_s, c.build_s,
        ddp_->options().zero_stage, saved_s, seconds_since(t1));
    std::fflush(stdout);
  }
}

}  // namespace cohort::train
