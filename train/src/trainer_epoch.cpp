// Trainer::train_epoch (see trainer.hpp): one epoch's step loop, as Trainer::EpochRun, whose parts
// are the phases of a step: the elastic group's changes before it, the micro-batches (forward,
// loss, backward; gradient sync on the last), clipping, the optimizer (with the GradScaler), and
// what follows a step (scheduler, EMA, step checkpoint, losses read back, progress and scalars).
// The rules for distributed runs and GPU loss readback are in docs/TRAINING.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cohort/core/autocast.hpp"
#include "cohort/core/run_status.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/layers/clip_grad.hpp"
#include "cohort/train/progress.hpp"
#include "cohort/train/trainer.hpp"
#include "pending_losses.hpp"
#include "trainer_elastic.hpp"
#include "trainer_loop.hpp"

namespace cohort::train {

class Trainer::EpochRun {
 public:
  EpochRun(Trainer& t, data::DataLoader& train, std::int64_t epoch);
  EpochRun(const EpochRun&) = delete;
  EpochRun& operator=(const EpochRun&) = delete;
  ~EpochRun() { trainer_.loss_.set_check_finite(saved_check_finite_); }
  EpochResult run();

 private:
  enum class Before { go, again, leave };  // elastic_before: run the step, redo it, or return
  void count_steps(std::int64_t done);
  void take_over_progress(std::int64_t at);
  double read_back(std::int64_t last_step);
  Before elastic_before(std::int64_t& step);
  std::int64_t recover(const std::string& why, bool planned);
  std::int64_t micro_batches(std::int64_t step, std::vector<std::int64_t>& step_samples);
  void clip(std::int64_t step);
  void optimizer_step();
  void step_done(std::int64_t step, const std::vector<std::int64_t>& step_samples,
                 std::int64_t step_t0);
  void finish();

  Trainer& trainer_;
  const TrainerOptions& options_;
  data::DataLoader& train_;
  const std::int64_t epoch_;
  EpochResult r_;
  double loss_sum_ = 0;
  std::int64_t first_ = 0;  // 0, or the step after a mid-epoch checkpoint this run resumed from
  std::int64_t micro_ = 0, steps_ = 0;
  std::int64_t samples_ = 0;
  std::vector<ParameterPtr> params_;  // clipped without a ZeRO DDP
  ProgressBar bar_;
  std::chrono::steady_clock::time_point t0_;
  data::Batch batch_;
  bool saved_check_finite_;
  PendingLosses pending_;
  std::int64_t capacity_ = 0;
  bool deferred_ = false;  // the model's device is not host-accessible: read losses at log points
  std::string device_name_;
};

EpochResult Trainer::train_epoch(data::DataLoader& train, std::int64_t epoch) {
  EpochRun run(*this, train, epoch);
  return run.run();
}

Trainer::EpochRun::EpochRun(Trainer& t, data::DataLoader& train, std::int64_t epoch)
    : trainer_(t),
      options_(t.options_),
      train_(train),
      epoch_(epoch),
      bar_(stdout, t.options_.log_interval, t.options_.show_progress ? -1 : 0),
      saved_check_finite_(t.loss_.check_finite()) {
  // An elastic group keeps the launch's shards, regrouped for the group it is now
  // (DataLoader::regroup; the identity while nothing changed).
  if (options_.elastic)
    trainer_.elastic_epoch_loader(train_);
  else
    shard_loader(train_, trainer_.rank(), trainer_.world_size(), true, "training");
  trainer_.model_.train();
  r_.epoch = epoch_;
  first_ = trainer_.apply_resume(train_, epoch_, r_, loss_sum_);
  count_steps(first_);
  // The batches of the steps already done are skipped, not assembled.
  train_.set_epoch(epoch_ - 1, std::min(micro_, first_ * options_.accumulation));
  if (options_.max_grad_norm > 0) params_ = trainer_.model_.parameters();
  if (options_.show_progress) bar_.start_epoch(epoch_, options_.epochs, steps_, first_);
  r_.steps = first_;
  t0_ = std::chrono::steady_clock::now();
  // With loss scaling a non-finite loss is the scaler's to handle, as in PyTorch: its gradients
  // are non-finite, the step is skipped and the scale backs off (reported at the epoch's end).
  if (options_.grad_scaler) trainer_.loss_.set_check_finite(false);
  capacity_ =
      options_.accumulation * std::max<std::int64_t>(1, std::min(options_.log_interval, steps_));
}

// The epoch's micro-batches and steps (`done` steps done): again after an elastic change that
// kept each rank's batch, which changes them.
void Trainer::EpochRun::count_steps(std::int64_t done) {
  micro_ = train_.num_batches();
  steps_ = micro_ / options_.accumulation;
  if (steps_ == 0 && micro_ > 0) steps_ = 1;  // fewer batches than one accumulation: one step
  if (options_.max_steps_per_epoch > 0) steps_ = std::min(steps_, options_.max_steps_per_epoch);
  COHORT_CHECK(done <= steps_, "Trainer: the checkpoint resumed from was saved after step ", done,
               " of epoch ", epoch_, ", but this run's epoch has ", steps_, " steps");
  if (options_.max_steps > 0)
    steps_ = std::min(steps_,
                      done + std::max<std::int64_t>(0, options_.max_steps - trainer_.global_step_));
}

// Elastic: a rank that became the group's rank 0 shows the progress from here on.
void Trainer::EpochRun::take_over_progress(std::int64_t at) {
  if (!trainer_.is_lead() || !trainer_.progress_wanted_ || options_.show_progress) return;
  trainer_.options_.show_progress = true;
  bar_ = ProgressBar(stdout, options_.log_interval, -1);
  bar_.start_epoch(epoch_, options_.epochs, steps_, at);
}

// Reads the pending losses back into the history and the epoch sum; returns the last one. On a
// device the Loss's own finite check (a readback per step) is off, so it is done here, late.
double Trainer::EpochRun::read_back(std::int64_t last_step) {
  const std::vector<double> losses = pending_.read_back();
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const double v = losses[i];
    if (deferred_ && saved_check_finite_ && !std::isfinite(v)) {
      const auto back = static_cast<std::int64_t>(losses.size() - 1 - i);
      COHORT_FAIL("Trainer: the loss of step ", last_step - back + 1, " of epoch ", epoch_,
                  " (global step ", trainer_.global_step_ - back, ") is ",
                  std::isnan(v) ? "nan" : "inf", "; on ", device_name_,
                  " losses are read back every ", options_.log_interval,
                  " steps (log interval), so ", back, " more step", back == 1 ? "" : "s",
                  " ran after it. A label outside the classes shows as a nan loss there; the "
                  "DataLoader checks labels on the host");
    }
    loss_sum_ += v;
    trainer_.history_.push_back(v);
  }
  return trainer_.history_.empty() ? 0.0
                                   : trainer_.history_.back();  // the newest step loss read back
}

EpochResult Trainer::EpochRun::run() {
  for (std::int64_t step = first_; step < steps_; ++step) {
    if (options_.elastic) {
      const Before b = elastic_before(step);
      if (b == Before::leave) return r_;
      if (b == Before::again) continue;
    }
    // The whole step as one span on the "steps" track (the profile's ProfilerStep#N).
    const std::int64_t step_t0 = trace::enabled() ? trace::now_us() : -1;
    const std::int64_t pending_before = pending_.count, samples_before = samples_;
    const std::size_t pending_steps_before = pending_.steps.size();
    std::vector<std::int64_t> step_samples;  // for after_step
    try {
      if (micro_batches(step, step_samples) == 0) break;
      if (trainer_.ddp_) {  // reporting only: both are already inside backward
        trainer_.timer_.add_within("comm", "backward", trainer_.ddp_->last_step().comm_wait_s);
        trainer_.timer_.add_within("overlap", "backward", trainer_.ddp_->last_step().overlap_s);
      }
      optim::GradScaler* const scaler = options_.grad_scaler;
      if (scaler)  // before the hook and clipping
        trainer_.timer_.time("optimizer", [&] { scaler->unscale(trainer_.opt_); });
      const bool skip = scaler && scaler->found_inf();
      if (trainer_.after_backward) trainer_.after_backward();
      if (options_.max_grad_norm > 0 && !skip) clip(step);
      optimizer_step();
    } catch (const Error& e) {
      if (!options_.elastic || !trainer_.elastic_failure(e)) throw;
      trainer_.model_.set_grad_sync(true);
      pending_.count = pending_before;  // the discarded step's losses (ZeRO: its optimizer
      pending_.steps.resize(pending_steps_before);  // step fails after the step's end is noted)
      samples_ = samples_before;
      step = recover(e.what(), false);
      count_steps(step + 1);
      take_over_progress(step + 1);
      continue;
    }
    step_done(step, step_samples, step_t0);
  }
  finish();
  return r_;
}

// Elastic: the group changes (trainer_elastic.cpp); returns the step before the next one to run.
// With ZeRO the group goes back to a checkpoint: the losses of the steps it trains again leave
// the history (read back first, so that they are the newest there).
std::int64_t Trainer::EpochRun::recover(const std::string& why, bool planned) {
  const std::int64_t was = trainer_.global_step_;
  if (trainer_.elastic_reshards()) read_back(r_.steps);
  const std::int64_t step =
      trainer_.elastic_recover(train_, epoch_, r_, loss_sum_, why, planned) - 1;
  auto& h = trainer_.history_;
  const auto undone =
      static_cast<std::size_t>(std::max<std::int64_t>(0, was - trainer_.global_step_));
  h.resize(h.size() - std::min(undone, h.size()));
  return step;
}

// Before a step of an elastic group: grow back at a due boundary, or replay a recorded change
// (leaving the group when this rank is not in it).
Trainer::EpochRun::Before Trainer::EpochRun::elastic_before(std::int64_t& step) {
  parallel::ElasticGroup& g = *options_.elastic;
  if (g.grow_due(trainer_.global_step_)) {
    trainer_.elastic_grow(train_, epoch_, r_, loss_sum_);
    count_steps(r_.steps);
  }
  if (const parallel::MembershipChange* c = g.replay_at(trainer_.global_step_)) {
    const auto& keep = c->new_members;
    if (std::find(keep.begin(), keep.end(), g.launch_rank()) == keep.end()) {
      trainer_.writer_.wait();  // its part of the step's checkpoint, which the others may load
      g.leave();
      trainer_.left_group_ = true;
      std::printf("rank %d leaves the group at step %lld (replay of membership %lld)\n",
                  g.launch_rank(), static_cast<long long>(trainer_.global_step_),
                  static_cast<long long>(c->epoch));
      return Before::leave;
    }
    step = recover("replay of membership " + std::to_string(c->epoch) + ": " + c->reason, true);
    count_steps(step + 1);
    take_over_progress(step + 1);
    return Before::again;
  }
  trainer_.elastic_mark();
  return Before::go;
}

// The step's micro-batches: `accumulation`, fewer only when the epoch has fewer batches. Returns
// how many ran (0: the loader ran out).
std::int64_t Trainer::EpochRun::micro_batches(std::int64_t step,
                                              std::vector<std::int64_t>& step_samples) {
  const std::int64_t k_this = std::max<std::int64_t>(
      1, std::min(options_.accumulation, micro_ - step * options_.accumulation));
  std::int64_t k_done = 0;
  for (std::int64_t k = 0; k < k_this; ++k) {
    const bool got = trainer_.timer_.time(
        "data", [&] { return train_.next(batch_); }, "data");
    if (!got) break;
    optim::GradScaler* const scaler = options_.grad_scaler;
    // batch.weight: an elastic group's uneven split of the global batch (1 otherwise).
    const float scale = (scaler ? scaler->scale() : 1.0f) /
                        static_cast<float>(options_.accumulation) *
                        static_cast<float>(batch_.weight);
    // Only the step's last micro-batch synchronises gradients across replicas (a no-op for a
    // plain model).
    trainer_.model_.set_grad_sync(k + 1 >= k_this);
    const autocast amp(batch_.images.device(), options_.amp);
    trainer_.timer_.time("forward", [&] {
      Tensor out = trainer_.model_.forward(batch_.images);
      if (!deferred_ && !out.device().host_accessible()) {
        deferred_ = true;
        device_name_ = out.device().name();
        trainer_.loss_.set_check_finite(false);
      }
      // MixUp / CutMix (DataLoaderOptions::batch_transform): the soft targets.
      pending_.add(
          trainer_.loss_.forward(out, batch_.targets.defined() ? batch_.targets : batch_.labels),
          capacity_);
    });
    trainer_.timer_.time("backward",
                         [&] { trainer_.model_.backward(trainer_.loss_.backward(scale), false); });
    samples_ += batch_.images.dim(0);
    if (trainer_.after_step)
      step_samples.insert(step_samples.end(), batch_.samples.begin(), batch_.samples.end());
    ++k_done;
  }
  trainer_.model_.set_grad_sync(true);
  if (k_done > 0) pending_.end_step(k_done);
  return k_done;
}

void Trainer::EpochRun::clip(std::int64_t step) {
  const std::int64_t global = trainer_.global_step_ + 1;
  trainer_.timer_.time("clip", [&] {
    r_.grad_norm = with_context(
        "Trainer (clipping the gradients of step " + std::to_string(step + 1) + " of epoch " +
            std::to_string(epoch_) + ", global step " + std::to_string(global) + ")",
        [&] {
          if (trainer_.ddp_ &&
              trainer_.ddp_->options().zero_stage > 0)  // the norm over every rank's shard
            return trainer_.ddp_->clip_grad_norm(options_.max_grad_norm, options_.grad_norm_type,
                                                 options_.error_if_nonfinite);
          return nn::clip_grad_norm(params_, options_.max_grad_norm, options_.grad_norm_type,
                                    options_.error_if_nonfinite);
        });
  });
  if (!std::isfinite(r_.grad_norm) && ++r_.nonfinite_grad_norms <= 3 && trainer_.is_lead())
    std::fprintf(stderr,
                 "Trainer: step %lld of epoch %lld (global step %lld): the total gradient norm "
                 "is %s; the gradients were scaled by max_grad_norm / norm as torch does "
                 "(error_if_nonfinite stops instead)%s\n",
                 static_cast<long long>(step + 1), static_cast<long long>(epoch_),
                 static_cast<long long>(global), std::isnan(r_.grad_norm) ? "nan" : "inf",
                 r_.nonfinite_grad_norms == 3 ? "; further such steps this epoch are counted, "
                                                "not printed"
                                              : "");
}

void Trainer::EpochRun::optimizer_step() {
  trainer_.timer_.time("optimizer", [&] {
    const ScaledLr lr(trainer_.opt_,
                      trainer_.elastic_lr_factor());  // elastic, each rank's batch kept
    if (optim::GradScaler* const scaler = options_.grad_scaler) {
      if (!scaler->step(trainer_.opt_)) ++r_.skipped_steps;
      scaler->update();
    } else {
      trainer_.opt_.step();
    }
    trainer_.opt_.zero_grad();
  });
}

// After a step that ran: the per-step scheduler and the EMA, the counters and the step's trace
// span (from step_t0; -1: not tracing), a step checkpoint, the losses read back (every step on
// the host, at log points on a device), after_step, and the progress and scalars.
void Trainer::EpochRun::step_done(std::int64_t step, const std::vector<std::int64_t>& step_samples,
                                  std::int64_t step_t0) {
  if (trainer_.sched_ && options_.scheduler_interval == SchedulerInterval::step)
    trainer_.sched_->step();
  if (options_.ema && step % options_.ema_steps == 0) {  // torchvision: i % model_ema_steps
    options_.ema->update(trainer_.ddp_ ? trainer_.ddp_->module() : trainer_.model_);
    if (epoch_ - 1 < options_.ema_warmup_epochs) options_.ema->reset();
  }
  trainer_.timer_.end_step();
  ++trainer_.global_step_;
  if (trainer_.elastic_) trainer_.elastic_step_done();
  if (step_t0 >= 0)
    trace::record("step " + std::to_string(trainer_.global_step_), "steps", step_t0,
                  trace::now_us() - step_t0);
  ++r_.steps;
  run_status::note_step(trainer_.global_step_);
  // A step checkpoint. Also at the epoch's last step when fit evaluates before its epoch-end
  // save (a rank can die in the evaluation). Every rank takes part: the loss sum so far is
  // averaged over them.
  if (options_.checkpoint_every_steps > 0 &&
      trainer_.global_step_ % options_.checkpoint_every_steps == 0 &&
      !(step + 1 == steps_ && trainer_.epoch_save_follows_)) {
    read_back(step);  // a device's pending losses: the sum must be complete
    trainer_.save_checkpoint_now(train_, epoch_ - 1, step + 1, r_, loss_sum_, false);
  }
  if (trainer_.is_lead()) trainer_.report_saves(options_.show_progress ? &bar_ : nullptr);
  const bool log_point = (step + 1) % options_.log_interval == 0 || step + 1 == steps_;
  const double step_loss = deferred_ && !log_point ? 0.0 : read_back(step);
  if (trainer_.after_step)
    trainer_.after_step(trainer_.global_step_, step_samples);  // the loss is in the history
  if (deferred_ && !log_point) return;
  const double elapsed = seconds_since(t0_);
  const double ips =
      elapsed > 0 ? static_cast<double>(samples_ * options_.world_size) / elapsed : 0;
  if (options_.show_progress) bar_.update(step, step_loss, ips);
  if (!log_point) return;
  std::vector<std::pair<std::string, double>> scalars = {
      {"loss", step_loss}, {"lr", trainer_.opt_.lr()}, {"images_per_s", ips}};
  if (options_.max_grad_norm > 0) scalars.emplace_back("grad_norm", r_.grad_norm);
  trainer_.log_scalars("train", scalars);
  std::vector<std::pair<std::string, double>> row = {
      {"step", static_cast<double>(trainer_.global_step_)}, {"epoch", static_cast<double>(epoch_)}};
  row.insert(row.end(), scalars.begin(), scalars.end());
  trainer_.metrics_.write("train", row, {{"phase_ms", trainer_.timer_.mean_ms()}});
}

// The epoch's figures: its mean loss (reduce_metric: over the ranks), images/s, the samples
// that failed to read, and the GradScaler's skipped steps.
void Trainer::EpochRun::finish() {
  read_back(r_.steps - 1);  // steps left pending when the epoch ended early
  if (options_.show_progress && trainer_.is_lead()) trainer_.report_saves(&bar_);
  if (options_.show_progress) bar_.end_epoch();
  const double elapsed = seconds_since(t0_);
  trainer_.train_seconds_ += elapsed;
  trainer_.train_samples_ += samples_;
  r_.train_loss = r_.steps ? loss_sum_ / static_cast<double>(r_.steps) : 0.0;
  if (trainer_.reduce_metric) r_.train_loss = trainer_.reduce_metric(r_.train_loss);
  r_.images_per_s =
      elapsed > 0 ? static_cast<double>(samples_ * options_.world_size) / elapsed : 0.0;
  r_.bad_samples = trainer_.report_bad_samples(train_, "epoch " + std::to_string(epoch_));
  // Loss scaling's skipped steps (the same on every rank: the inf check follows the all-reduce).
  if (options_.grad_scaler && r_.skipped_steps > 0 && trainer_.is_lead()) {
    const bool all = r_.skipped_steps >= r_.steps;
    std::fprintf(stderr,
                 "Trainer: grad scaler skipped %lld of %lld steps in epoch %lld (inf or NaN "
                 "gradients); its scale is now %g%s\n",
                 static_cast<long long>(r_.skipped_steps), static_cast<long long>(r_.steps),
                 static_cast<long long>(epoch_), static_cast<double>(options_.grad_scaler->scale()),
                 all ? ": no step of the epoch was taken, so the gradients are not finite at any "
                       "scale tried; look for NaN in the loss or the data, or a learning rate "
                       "that diverged"
                     : "");
  }
}

}  // namespace cohort::train
