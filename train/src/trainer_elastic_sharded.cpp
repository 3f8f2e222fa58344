// Elastic training with ZeRO (TrainerOptions::elastic over a DistributedDataParallel with
// zero_stage >= 1), pure sharding: a lost rank's shard of the optimizer state (and at stage 3 of
// the parameters) is gone with it, so the survivors go back to the newest complete sharded
// checkpoint (checkpoint_dir/sharded), resharded onto the new group, and go on from its step;
// the steps after it are trained again by the new group. The membership log records that step,
// so a replay (--replay-membership) changes the group there, from the same checkpoint, and ends
// bit for bit where the run with the failure did. The rest of elastic training is
// trainer_elastic.cpp.
#include <chrono>
#include <cstdio>

#include "cohort/train/sharded_checkpoint.hpp"
#include "cohort/train/trainer.hpp"
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
  const parallel::MembershipChange c =
      group.shrink(why, global_step_, [&](const parallel::MembershipChange& change) {
        t_state = std::chrono::steady_clock::now();
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
