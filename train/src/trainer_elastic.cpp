// The Trainer's side of elastic training (TrainerOptions::elastic): what a step must put back when
// it is discarded, recognising a failure the group can survive, and moving onto the new group.
// The membership protocol itself is parallel/elastic.cpp.
#include <unistd.h>

#include <cstring>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "cohort/layers/dropout.hpp"
#include "cohort/train/trainer.hpp"
#include "elastic_bytes.hpp"
#include "metadata_text.hpp"
#include "trainer_elastic.hpp"
#include "trainer_loop.hpp"

namespace cohort::train {

using detail::broadcast_blob;
using detail::read_bytes;
using detail::write_bytes;

namespace {
void for_each_dropout(nn::Module& m, const std::function<void(nn::Dropout&)>& fn) {
  if (auto* d = dynamic_cast<nn::Dropout*>(&m)) fn(*d);
  for (const auto& [name, child] : m.children()) for_each_dropout(*child, fn);
}
// "membership 2 at step 85: ranks 0,2 -> 0,2,1 (rank 1 joined)"
std::string change_head(const parallel::MembershipChange& c) {
  const auto list = [](const std::vector<int>& v) {
    std::string out;
    for (int m : v) out += (out.empty() ? "" : ",") + std::to_string(m);
    return out;
  };
  return "membership " + std::to_string(c.epoch) + " at step " + std::to_string(c.step) +
         ": ranks " + list(c.old_members) + " -> " + list(c.new_members) + " (" + c.reason + ")";
}
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// The state a joiner or a rank behind takes, as the pair of files a checkpoint is, moved as bytes
// over the communicator from `root` (any host): [u64 n][model file][u64 m][state file]. The files
// live in /dev/shm (memory) on both sides, only while they are read or written.
std::string shm_path(const std::string& what) {
  return "/dev/shm/cohort-elastic-" + what + "-" + std::to_string(::getpid()) + ".safetensors";
}
void append(std::vector<std::uint8_t>& blob, const std::vector<std::uint8_t>& part) {
  const std::uint64_t n = part.size();
  const auto* p = reinterpret_cast<const std::uint8_t*>(&n);
  blob.insert(blob.end(), p, p + sizeof n);
  blob.insert(blob.end(), part.begin(), part.end());
}
// The checkpoint pair `save` writes, as one blob.
std::vector<std::uint8_t> pack_state(const std::function<void(const std::string&)>& save) {
  const std::string path = shm_path("send");
  save(path);
  std::vector<std::uint8_t> blob;
  append(blob, read_bytes(path));
  append(blob, read_bytes(state_path_for(path)));
  std::filesystem::remove(path);
  std::filesystem::remove(state_path_for(path));
  return blob;
}
// A blob back into the checkpoint pair, for `load`.
template <class Load>
auto unpack_state(const std::vector<std::uint8_t>& blob, Load&& load) {
  std::uint64_t n = 0, m = 0;
  COHORT_CHECK(blob.size() >= sizeof n, "elastic: the state received is empty");
  std::memcpy(&n, blob.data(), sizeof n);
  COHORT_CHECK(blob.size() >= sizeof n + n + sizeof m, "elastic: the state received is cut short");
  std::memcpy(&m, blob.data() + sizeof n + n, sizeof m);
  COHORT_CHECK(blob.size() == 2 * sizeof n + n + m, "elastic: the state received is ", blob.size(),
               " bytes, its parts say ", 2 * sizeof n + n + m);
  const std::string path = shm_path("recv");
  write_bytes(path, blob.data() + sizeof n, n);
  write_bytes(state_path_for(path), blob.data() + 2 * sizeof n + n, m);
  struct Cleanup {
    std::string path;
    ~Cleanup() {
      std::filesystem::remove(path);
      std::filesystem::remove(state_path_for(path));
    }
  } cleanup{path};
  return load(path);
}
}  // namespace

bool Trainer::keeps_rank_batch() const {
  return options_.elastic && options_.elastic->options().keep_rank_batch;
}

double Trainer::elastic_lr_factor() const {
  if (!keeps_rank_batch()) return 1.0;
  return static_cast<double>(world_size()) / static_cast<double>(options_.elastic->launch_world());
}

void Trainer::elastic_epoch_loader(data::DataLoader& train) {
  const parallel::ElasticGroup& g = *options_.elastic;
  if (train.rank() != g.launch_rank() || train.world_size() != g.launch_world())
    train.shard(g.launch_rank(), g.launch_world());
  train.regroup(rank(), world_size(), keeps_rank_batch());
  if (!joined_layout_.empty()) {  // a joiner: the group's layout of this epoch
    train.set_layout(joined_layout_);
    joined_layout_.clear();
  }
}

void Trainer::elastic_take_group() {
  const auto& c = options_.elastic->communicator();
  comm_ = c.get();
  options_.communicator = c;
  options_.world_size = c->size();
  options_.distributed_eval = c->size() > 1;
}

void Trainer::elastic_mark() {
  if (!elastic_) {
    COHORT_CHECK(ddp_ != nullptr,
                 "Trainer: elastic training needs a DistributedDataParallel "
                 "model over the elastic group's communicator");
    COHORT_CHECK(&ddp_->communicator() == options_.elastic->communicator().get(),
                 "Trainer: the DistributedDataParallel model does not use the elastic group's "
                 "communicator (build it over elastic.communicator())");
    elastic_ = std::make_unique<ElasticState>();
    for (const auto& b : ddp_->module().named_buffers()) {
      elastic_->buffers.push_back(b.tensor);
      elastic_->saved.push_back(b.tensor.clone());
    }
  }
  ElasticState& s = *elastic_;
  s.rng.clear();
  for_each_dropout(ddp_->module(), [&](nn::Dropout& d) { s.rng.emplace_back(&d, d.step()); });
  for (std::size_t i = 0; i < s.buffers.size(); ++i) s.saved[i].copy_from(s.buffers[i]);
}

bool Trainer::elastic_failure(const Error& e) const {
  // Raised by the communicator (its backend's name on the error), not by a layer or the data.
  return comm_ && e.backend() == comm_->backend();
}

std::int64_t Trainer::elastic_recover(data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                                      double& loss_sum, const std::string& why, bool planned) {
  parallel::ElasticGroup& group = *options_.elastic;
  if (!elastic_) elastic_mark();
  ElasticState& s = *elastic_;
  // The step in flight never happened here: its dropout masks and batch-norm updates go back.
  // (A replayed change comes between steps: nothing is in flight.)
  if (!planned) {
    for (auto& [d, step] : s.rng) d->set_step(step);
    for (std::size_t i = 0; i < s.buffers.size(); ++i) s.buffers[i].copy_from(s.saved[i]);
    std::fprintf(stderr, "[elastic] rank %d: step %lld failed (%s); agreeing on the group\n",
                 group.launch_rank(), static_cast<long long>(global_step_ + 1), why.c_str());
  }
  const std::int64_t failed_at = global_step_ + 1;
  auto t_state = std::chrono::steady_clock::now();
  const parallel::MembershipChange c =
      elastic_reshards() ? elastic_reshard(train, epoch, r, loss_sum, why, planned, t_state)
                         : group.shrink(why, global_step_);
  if (!elastic_reshards()) {
    t_state = std::chrono::steady_clock::now();
    elastic_take_group();
  }
  nn::Module& plain = ddp_->module();
  // Ranks behind the root (their step in flight completed elsewhere) take its whole state:
  // optimizer, scheduler, random streams and progress, as bytes over the new communicator (the
  // weights come with the DDP's broadcast below).
  const bool behind =
      !elastic_reshards() &&
      std::any_of(c.steps.begin(), c.steps.end(), [&](std::int64_t v) { return v != c.step; });
  if (behind) {
    std::vector<std::uint8_t> blob;
    if (comm_->rank() == c.root)
      blob = pack_state([&](const std::string& path) {
        save_checkpoint(path, plain, opt_, sched_,
                        TrainingProgress(epochs_done_, global_step_, r.steps));
      });
    blob = with_context("elastic: taking the state of the rank furthest ahead",
                        [&] { return broadcast_blob(*comm_, std::move(blob), c.root); });
    if (comm_->rank() != c.root) {
      const CheckpointLoad got = unpack_state(blob, [&](const std::string& path) {
        CheckpointLoad got = load_checkpoint(path, plain, opt_, sched_);
        restore_ema(got);
        return got;
      });
      COHORT_CHECK(got.progress.epoch == epoch - 1, "elastic: the root's state is from epoch ",
                   got.progress.epoch + 1, ", this rank is in epoch ", epoch,
                   " (a change across an epoch's end is not survived)");
      global_step_ = got.progress.global_step;
      r.steps = got.progress.step_in_epoch;
    }
  }
  if (!elastic_reshards()) ddp_->rebind(group.communicator(), c.root);
  opt_.zero_grad();
  // A poison batch: the group lost ranks again and again with the same step in flight (a sample
  // that kills the rank that loads it would, the global batch moving on to the survivors).
  const int limit = group.options().max_step_failures;
  if (!planned && limit > 0 && c.tries >= limit) {
    const std::int64_t at = r.steps * options_.accumulation;
    const auto list = [&](std::int64_t k) {
      std::string out;
      if (k >= train.num_batches()) return std::string("none (the epoch's end)");
      for (const std::int64_t i : train.global_batch_samples(k))
        out += (out.empty() ? "" : " ") + std::to_string(i);
      return out;
    };
    const std::string why =
        "elastic: global step " + std::to_string(global_step_ + 1) + " (step " +
        std::to_string(r.steps + 1) + " of epoch " + std::to_string(epoch) + ") lost ranks " +
        std::to_string(c.tries) + " times in a row (" + c.tries_history +
        "): a poison batch? Its samples (dataset indices): " + list(at) +
        "; and those loaded ahead for the next step: " + list(at + options_.accumulation) +
        ". Stopping instead of going round again (max_step_failures " + std::to_string(limit) +
        ", --elastic-step-failures)";
    group.stop(why);
    COHORT_FAIL(why);
  }
  // The rest of the epoch for the new group: its global batches split among the ranks there are
  // (keep the global batch), or dealt out in global batches of theirs (keep each rank's batch).
  train.regroup(comm_->rank(), comm_->size(), keeps_rank_batch(), r.steps * options_.accumulation);
  const double state_s = since(t_state);
  s.detect_s = c.detect_s;
  s.agree_s = c.agree_s;
  s.build_s = c.build_s;
  s.state_s = state_s;
  s.changed = std::chrono::steady_clock::now();
  s.report = true;
  s.planned = planned;
  if (comm_->rank() == 0) {
    const std::int64_t b = train.options().batch_size;
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.3f", elastic_lr_factor());
    const std::string kept =
        keeps_rank_batch()
            ? "batch per rank kept: global batch " + std::to_string(b * comm_->size()) +
                  ", learning rate x " + factor
            : "global batch kept, " + std::to_string(b * train.world_size() / comm_->size()) +
                  " samples per rank";
    std::string how;
    if (behind) how = " (ranks behind took the root's state)";
    if (elastic_reshards() && elastic_from_replicas_)
      how = " (ZeRO stage " + std::to_string(ddp_->options().zero_stage) +
            ", hybrid sharding: the lost chunks rebuilt from live replicas at step " +
            std::to_string(c.step) + ", resharded onto " + std::to_string(comm_->size()) +
            " ranks; no step lost, nothing read from disk)";
    else if (elastic_reshards())
      how = " (ZeRO stage " + std::to_string(ddp_->options().zero_stage) +
            ": the newest sharded checkpoint, of step " + std::to_string(c.step) +
            ", resharded onto " + std::to_string(comm_->size()) + " ranks; " +
            (failed_at > c.step + 1 ? "steps " + std::to_string(c.step + 1) + "-" +
                                          std::to_string(failed_at - 1) + " trained again"
                                    : "no step lost") +
            ")";
    std::printf(
        "[elastic] %s; %s; detection %s, agreement %.3f s, new communicator %.3f s, "
        "state %.3f s%s\n",
        change_head(c).c_str(), kept.c_str(),
        c.detect_s < 0 ? "unknown" : (std::to_string(c.detect_s).substr(0, 5) + " s").c_str(),
        c.agree_s, c.build_s, state_s, how.c_str());
    std::fflush(stdout);
  }
  return r.steps;
}

void Trainer::elastic_step_done() {
  ElasticState& s = *elastic_;
  if (!s.report) return;
  s.report = false;
  const double first = since(s.changed);
  if (comm_->rank() == 0) {
    const double total = std::max(0.0, s.detect_s) + s.agree_s + s.build_s + s.state_s + first;
    std::printf(
        "[elastic] training again: from the death to the new group's first completed "
        "step %.3f s = detection %.3f + agreement %.3f + communicator %.3f + state %.3f + "
        "first step %.3f%s\n",
        total, std::max(0.0, s.detect_s), s.agree_s, s.build_s, s.state_s, first,
        s.detect_s >= 0 ? ""
        : s.planned     ? " (a replayed change: no death)"
                        : " (no death time: the rank was declared dead, not seen to exit)");
    std::fflush(stdout);
  }
}

void Trainer::elastic_grow(data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                           double& loss_sum) {
  parallel::ElasticGroup& group = *options_.elastic;
  if (!elastic_) elastic_mark();
  if (elastic_reshards()) return elastic_grow_sharded(train, epoch, r, loss_sum);
  const parallel::MembershipChange c = group.grow(global_step_);
  if (c.new_members.size() == c.old_members.size()) return;  // every joiner refused
  const auto t0 = std::chrono::steady_clock::now();
  elastic_take_group();
  // The joiners' DistributedDataParallel constructors pair with this (same collectives).
  ddp_->rebind(group.communicator(), 0);
  // The loader first: its layout for the new group goes with the state (keep_rank_batch).
  opt_.zero_grad();
  train.regroup(comm_->rank(), comm_->size(), keeps_rank_batch(), r.steps * options_.accumulation);
  std::vector<std::uint8_t> blob;
  if (comm_->rank() == 0) {
    TrainingProgress p(epoch - 1, global_step_, r.steps, run_info(train));
    if (options_.grad_scaler)
      for (const auto& [k, v] : options_.grad_scaler->state().scalars)
        p.run["grad_scaler." + k] = detail::exact_text(v);
    p.run["epoch.loss_sum"] = detail::exact_text(loss_sum);
    p.run["epoch.grad_norm"] = detail::exact_text(r.grad_norm);
    p.run["epoch.nonfinite_grad_norms"] = std::to_string(r.nonfinite_grad_norms);
    p.run["epoch.skipped_steps"] = std::to_string(r.skipped_steps);
    blob = pack_state(
        [&](const std::string& path) { save_checkpoint(path, ddp_->module(), opt_, sched_, p); });
  }
  blob = with_context("elastic: sending the state to the joining ranks",
                      [&] { return broadcast_blob(*comm_, std::move(blob), 0); });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (comm_->rank() == 0) {
    std::printf(
        "[elastic] %s; agreement %.3f s, "
        "new communicator %.3f s, then %.3f s until the joiners had built their model "
        "and taken the state (%.2f MB)\n",
        change_head(c).c_str(), c.agree_s, c.build_s, s, static_cast<double>(blob.size()) / 1e6);
    std::fflush(stdout);
  }
}

void Trainer::elastic_receive_state() {
  joined_state_ = true;
  COHORT_CHECK(ddp_ != nullptr, "Trainer: elastic training needs a DistributedDataParallel model");
  const auto t0 = std::chrono::steady_clock::now();
  if (elastic_reshards()) {  // ZeRO: the group's sharded checkpoint of the boundary
    const CheckpointLoad got =
        with_context("elastic: rank " + std::to_string(options_.elastic->launch_rank()) +
                         " joining: loading the group's sharded checkpoint " + checkpoint_file_,
                     [&] { return resume(checkpoint_file_); });
    resume_checked_ = true;  // the group's own state: saved by fewer ranks
    std::printf(
        "[elastic] rank %d joined membership %lld at step %lld: the group's sharded "
        "checkpoint (ZeRO stage %d), resharded onto %d ranks, loaded in %.3f s\n",
        options_.elastic->launch_rank(),
        static_cast<long long>(options_.elastic->membership_epoch()),
        static_cast<long long>(got.progress.global_step), ddp_->options().zero_stage, comm_->size(),
        seconds_since(t0));
    std::fflush(stdout);
    return;
  }
  double moved = 0;
  const std::vector<std::uint8_t> blob =
      with_context("elastic: receiving the state from the group's rank 0",
                   [&] { return broadcast_blob(*comm_, {}, 0, &moved); });
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const CheckpointLoad got =
      unpack_state(blob, [&](const std::string& path) { return resume(path); });
  resume_checked_ = true;  // the group's own state: its world size may differ from the launch's
  if (const auto it = got.progress.run.find("loader.layout"); it != got.progress.run.end())
    joined_layout_ = it->second;
  const double mb = static_cast<double>(blob.size()) / 1e6;
  std::printf(
      "[elastic] rank %d joined membership %lld at step %lld: %.2f MB of state (model, "
      "optimizer, schedule, random streams, progress): waited %.3f s for it, moved in %.4f s "
      "(%.0f MB/s over %s), loaded in %.3f s\n",
      options_.elastic->launch_rank(), static_cast<long long>(options_.elastic->membership_epoch()),
      static_cast<long long>(got.progress.global_step), mb, waited - moved, moved,
      moved > 0 ? mb / moved : 0.0, comm_->backend().c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - waited);
  std::fflush(stdout);
}

}  // namespace cohort::train
