// The Trainer's side of elastic training (TrainerOptions::elastic): what a step must put back when
// it is discarded, recognising a failure the group can survive, and moving onto the new group.
// The membership protocol itself is parallel/elastic.cpp.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "cohort/layers/dropout.hpp"
#include "cohort/train/trainer.hpp"
#include "trainer_elastic.hpp"

namespace cohort::train {

namespace {
void for_each_dropout(nn::Module& m, const std::function<void(nn::Dropout&)>& fn) {
  if (auto* d = dynamic_cast<nn::Dropout*>(&m)) fn(*d);
  for (const auto& [name, child] : m.children()) for_each_dropout(*child, fn);
}
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

void Trainer::elastic_mark() {
  if (!elastic_) {
    COHORT_CHECK(ddp_ != nullptr, "Trainer: elastic training needs a DistributedDataParallel "
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
                                      const std::string& why, bool planned) {
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
  const parallel::MembershipChange c = group.shrink(why, global_step_);
  const auto t_state = std::chrono::steady_clock::now();
  comm_ = group.communicator().get();
  options_.communicator = group.communicator();
  options_.world_size = comm_->size();
  options_.distributed_eval = comm_->size() > 1;
  nn::Module& plain = ddp_->module();
  // Ranks behind the root (their step in flight completed elsewhere) take its whole state:
  // optimizer, scheduler, random streams and progress, through a file in memory (/dev/shm: the
  // group is on one host for this; the weights come with the DDP's broadcast below).
  const bool behind = std::any_of(c.steps.begin(), c.steps.end(),
                                  [&](std::int64_t v) { return v != c.step; });
  if (behind) {
    const std::string path = "/dev/shm/cohort-elastic-" + std::to_string(::getppid()) + "-m" +
                             std::to_string(c.epoch) + ".safetensors";
    if (comm_->rank() == c.root)
      save_checkpoint(path, plain, opt_, sched_, TrainingProgress(epochs_done_, global_step_, r.steps));
    comm_->barrier()->wait();
    if (comm_->rank() != c.root) {
      const CheckpointLoad got = load_checkpoint(path, plain, opt_, sched_);
      COHORT_CHECK(got.progress.epoch == epoch - 1, "elastic: the root's state is from epoch ",
                   got.progress.epoch + 1, ", this rank is in epoch ", epoch,
                   " (a change across an epoch's end is not survived)");
      global_step_ = got.progress.global_step;
      r.steps = got.progress.step_in_epoch;
    }
    comm_->barrier()->wait();
    if (comm_->rank() == c.root) {
      std::filesystem::remove(path);
      std::filesystem::remove(state_path_for(path));
    }
  }
  ddp_->rebind(group.communicator(), c.root);
  opt_.zero_grad();
  // Keep the global batch: the rest of the epoch's global batches split among the new group.
  train.regroup(comm_->rank(), comm_->size());
  train.set_epoch(epoch - 1, std::min(train.num_batches(), r.steps * options_.accumulation));
  const double state_s = since(t_state);
  s.detect_s = c.detect_s;
  s.agree_s = c.agree_s;
  s.build_s = c.build_s;
  s.state_s = state_s;
  s.changed = std::chrono::steady_clock::now();
  s.report = true;
  s.planned = planned;
  if (comm_->rank() == 0) {
    std::string from, to;
    for (int m : c.old_members) from += (from.empty() ? "" : ",") + std::to_string(m);
    for (int m : c.new_members) to += (to.empty() ? "" : ",") + std::to_string(m);
    std::printf("[elastic] membership %lld at step %lld: ranks %s -> %s (%s); global batch kept, "
                "%lld samples per rank; detection %s, agreement %.3f s, new communicator %.3f s, "
                "state %.3f s%s\n",
                static_cast<long long>(c.epoch), static_cast<long long>(c.step), from.c_str(),
                to.c_str(), c.reason.c_str(),
                static_cast<long long>(train.options().batch_size * train.world_size() /
                                       comm_->size()),
                c.detect_s < 0 ? "unknown" : (std::to_string(c.detect_s).substr(0, 5) + " s").c_str(),
                c.agree_s, c.build_s, state_s, behind ? " (ranks behind took the root's state)" : "");
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
    std::printf("[elastic] training again: from the death to the new group's first completed "
                "step %.3f s = detection %.3f + agreement %.3f + communicator %.3f + state %.3f + "
                "first step %.3f%s\n",
                total, std::max(0.0, s.detect_s), s.agree_s, s.build_s, s.state_s, first,
                s.detect_s >= 0 ? ""
                : s.planned   ? " (a replayed change: no death)"
                              : " (no death time: the rank was declared dead, not seen to exit)");
    std::fflush(stdout);
  }
}

}  // namespace cohort::train
