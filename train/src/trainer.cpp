// Trainer (see trainer.hpp): train_epoch's step loop (micro-batches, after_backward, clipping,
// optimizer, per-step scheduler), evaluate's cross-rank sums, and fit's order per epoch (train,
// buffer sync, evaluate, scalars, per-epoch scheduler step, checkpoint, hooks) until the epochs or
// the step budget run out; checkpoints and resuming are in trainer_checkpoint.cpp, the run
// report in trainer_report.cpp. The rules
// they follow for distributed runs and GPU loss readback are in docs/TRAINING.md. Helpers:
// shard_loader here, PendingLosses (pending_losses.hpp), the elastic parts in trainer_elastic.cpp.
#include "cohort/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/autocast.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/core/run_status.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/layers/clip_grad.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/progress.hpp"
#include "cohort/train/run_report.hpp"
#include "metadata_text.hpp"
#include "pending_losses.hpp"
#include "trainer_elastic.hpp"

namespace cohort::train {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Trainer::Trainer(nn::Module& model, nn::Loss& loss, optim::Optimizer& optimizer,
                 optim::Scheduler* scheduler, TrainerOptions options)
    : model_(model), loss_(loss), opt_(optimizer), sched_(scheduler), options_(std::move(options)) {
  COHORT_CHECK(options_.epochs >= 1, "Trainer: epochs must be >= 1, got ", options_.epochs);
  COHORT_CHECK(options_.log_interval >= 1, "Trainer: log interval must be >= 1, got ",
               options_.log_interval);
  COHORT_CHECK(options_.accumulation >= 1, "Trainer: accumulation must be >= 1, got ",
               options_.accumulation);
  COHORT_CHECK(options_.amp == DType::f32 || options_.amp == DType::bf16 || options_.amp == DType::f16,
               "Trainer: amp must be bf16, f16 or f32 (off), got ", dtype_name(options_.amp));
  COHORT_CHECK(options_.max_steps == -1 || options_.max_steps >= 1,
               "Trainer: max_steps must be >= 1 or -1, got ", options_.max_steps);
  COHORT_CHECK(options_.max_steps_per_epoch == -1 || options_.max_steps_per_epoch >= 1,
               "Trainer: max_steps_per_epoch must be >= 1 or -1, got ",
               options_.max_steps_per_epoch);
  COHORT_CHECK(std::isfinite(options_.max_grad_norm) && options_.max_grad_norm >= 0,
               "Trainer: max_grad_norm must be finite and >= 0 (0: no clipping), got ",
               options_.max_grad_norm);
  COHORT_CHECK(options_.grad_norm_type > 0, "Trainer: grad_norm_type must be > 0 (or infinity), "
               "got ", options_.grad_norm_type);
  COHORT_CHECK(options_.world_size >= 1, "Trainer: world size must be >= 1, got ",
               options_.world_size);
  COHORT_CHECK(options_.checkpoint_path.empty() || options_.checkpoint_dir.empty(),
               "Trainer: set checkpoint_path or checkpoint_dir, not both (got '",
               options_.checkpoint_path, "' and '", options_.checkpoint_dir, "')");
  COHORT_CHECK(options_.checkpoint_every_steps >= 0, "Trainer: checkpoint_every_steps must be >= 0 "
               "(0: at epochs' ends only), got ", options_.checkpoint_every_steps);
  COHORT_CHECK(options_.checkpoint_every_steps == 0 || !options_.checkpoint_path.empty() ||
                   !options_.checkpoint_dir.empty(),
               "Trainer: checkpoint_every_steps = ", options_.checkpoint_every_steps,
               " needs checkpoint_dir (or checkpoint_path) to save to");
  if (options_.report_path.empty())
    if (const char* env = std::getenv("COHORT_RUN_REPORT")) options_.report_path = env;
  if (!options_.checkpoint_path.empty()) checkpoint_file_ = options_.checkpoint_path;
  if (!options_.checkpoint_dir.empty())
    checkpoint_file_ = options_.checkpoint_dir + "/checkpoint.safetensors";
  ddp_ = dynamic_cast<parallel::DistributedDataParallel*>(&model_);
  comm_ = options_.communicator.get();
  if (ddp_) {
    COHORT_CHECK(!comm_ || comm_ == &ddp_->communicator(), "Trainer: TrainerOptions::communicator "
                 "is not the communicator of the DistributedDataParallel model it trains");
    comm_ = &ddp_->communicator();
    // ZeRO: each rank's optimizer holds only its shard of the state, and each rank's gradients
    // only the averaged shard. Clipping takes the norm over every rank's shard
    // (DistributedDataParallel::clip_grad_norm) and a GradScaler's inf check is agreed over the
    // ranks (shard_grad_scaler); checkpoints and elastic regrouping need the whole state.
    if (const int z = ddp_->options().zero_stage; z > 0) {
      const std::string why = "Trainer: the model is a DistributedDataParallel with zero_stage " +
                              std::to_string(z) + ", ";
      COHORT_CHECK(options_.checkpoint_path.empty() && options_.checkpoint_dir.empty(), why,
                   "whose optimizer state is split over the ranks: checkpoints of it (one file "
                   "per rank) do not exist in cohort; train without checkpoint_path/"
                   "checkpoint_dir, or with zero_stage 0");
      COHORT_CHECK(options_.elastic == nullptr, why, "and elastic training would move the shards "
                   "onto a new group, which cohort does not do");
      COHORT_CHECK(z < 3 || options_.ema == nullptr, why,
                   "whose parameters are split over "
                   "the ranks between steps: an EMA of them (TrainerOptions::ema, --model-ema) "
                   "would gather the whole model every ema_steps; train it at zero_stage 1 or 2");
      if (options_.grad_scaler) ddp_->shard_grad_scaler(*options_.grad_scaler);
    }
  }
  if (comm_) {
    COHORT_CHECK(options_.world_size == 1 || options_.world_size == comm_->size(),
                 "Trainer: world_size ", options_.world_size, " contradicts the communicator's ",
                 comm_->size(), " ranks");
    options_.world_size = comm_->size();
    options_.distributed_eval = comm_->size() > 1;
    if (comm_->size() > 1) {
      // comm_ read at each call: elastic training replaces it.
      reduce_metric = [this, dev = model_.device()](double v) {
        with_context("Trainer (averaging the epoch's training loss over the ranks)", [&] {
          comm::allreduce_host(*comm_, dev, &v, 1, DType::f64, comm::ReduceOp::avg);
        });
        return v;
      };
    }
  }
  COHORT_CHECK(options_.ema_steps >= 1, "TrainerOptions::ema_steps must be >= 1, got ",
               options_.ema_steps, " (torchvision's --model-ema-steps)");
  COHORT_CHECK(options_.ema_warmup_epochs >= 0, "TrainerOptions::ema_warmup_epochs must be >= 0, "
               "got ", options_.ema_warmup_epochs);
  // Rank 0 alone shows and writes what describes the whole run.
  progress_wanted_ = options_.show_progress;
  if (!is_lead()) {
    options_.show_progress = false;
    options_.metrics_path.clear();
    options_.tensorboard_dir.clear();
  }
  if (!options_.metrics_path.empty()) metrics_ = MetricsWriter(options_.metrics_path);
  if (!options_.tensorboard_dir.empty())
    tensorboard_ = std::make_unique<SummaryWriter>(options_.tensorboard_dir);
  // A report that cannot be written fails now, not after the training it would report.
  if (!options_.report_path.empty() && is_lead()) check_run_report_path(options_.report_path);
}

Trainer::~Trainer() {
  try {
    writer_.wait();  // a save still in flight reaches the disk
  } catch (const std::exception& e) {
    if (is_lead()) std::fprintf(stderr, "Trainer: the last checkpoint write failed: %s\n", e.what());
  }
}

int Trainer::rank() const { return comm_ ? comm_->rank() : 0; }
int Trainer::world_size() const { return static_cast<int>(options_.world_size); }

void Trainer::log_scalars(const std::string& prefix,
                          const std::vector<std::pair<std::string, double>>& values) {
  if (!tensorboard_) return;
  for (const auto& [name, v] : values)
    tensorboard_->add_scalar(prefix + "/" + name, v, global_step_);
}

double Trainer::images_per_s() const {
  return train_seconds_ > 0
             ? static_cast<double>(train_samples_ * options_.world_size) / train_seconds_
             : 0.0;
}

namespace {
// Restores the loss's finite check, which train_epoch turns off on a GPU (where it is a readback).
struct CheckFiniteGuard {
  nn::Loss& loss;
  bool saved;
  ~CheckFiniteGuard() { loss.set_check_finite(saved); }
};
}  // namespace

namespace {
// The training loader serves this rank's shard: sharded here unless the caller already did.
void shard_loader(data::DataLoader& loader, int rank, int world, bool pad, const char* which) {
  if (world <= 1) return;
  if (loader.world_size() == 1) {
    loader.shard(rank, world, pad);
    return;
  }
  COHORT_CHECK(loader.rank() == rank && loader.world_size() == world, "Trainer: the ", which,
               " loader serves shard ", loader.rank(), " of ", loader.world_size(),
               " but this is rank ", rank, " of ", world,
               " (leave the loader unsharded and the Trainer shards it)");
}
}  // namespace

EpochResult Trainer::train_epoch(data::DataLoader& train, std::int64_t epoch) {
  // An elastic group keeps the launch's shards, regrouped for the group it is now
  // (DataLoader::regroup; the identity while nothing changed).
  if (options_.elastic) {
    elastic_epoch_loader(train);
  } else {
    shard_loader(train, rank(), world_size(), true, "training");
  }
  model_.train();
  EpochResult r;
  r.epoch = epoch;
  double loss_sum = 0;
  // 0, or the step after a mid-epoch checkpoint this run resumed from.
  const std::int64_t first = apply_resume(train, epoch, r, loss_sum);
  std::int64_t micro = 0, steps = 0;
  // The epoch's micro-batches and steps (`done` steps done): again after an elastic change that
  // kept each rank's batch, which changes them.
  const auto count_steps = [&](std::int64_t done) {
    micro = train.num_batches();
    steps = micro / options_.accumulation;
    if (steps == 0 && micro > 0) steps = 1;  // fewer batches than one accumulation: one step
    if (options_.max_steps_per_epoch > 0) steps = std::min(steps, options_.max_steps_per_epoch);
    COHORT_CHECK(done <= steps, "Trainer: the checkpoint resumed from was saved after step ", done,
                 " of epoch ", epoch, ", but this run's epoch has ", steps, " steps");
    if (options_.max_steps > 0)
      steps = std::min(steps, done + std::max<std::int64_t>(0, options_.max_steps - global_step_));
  };
  count_steps(first);
  // The batches of the steps already done are skipped, not assembled.
  train.set_epoch(epoch - 1, std::min(micro, first * options_.accumulation));
  const std::vector<ParameterPtr> params =
      options_.max_grad_norm > 0 ? model_.parameters() : std::vector<ParameterPtr>{};
  ProgressBar bar(stdout, options_.log_interval, options_.show_progress ? -1 : 0);
  if (options_.show_progress) bar.start_epoch(epoch, options_.epochs, steps, first);
  r.steps = first;
  std::int64_t samples = 0;
  const auto t0 = std::chrono::steady_clock::now();
  data::Batch batch;
  const CheckFiniteGuard guard{loss_, loss_.check_finite()};
  // With loss scaling a non-finite loss is the scaler's to handle, as in PyTorch: its gradients
  // are non-finite, the step is skipped and the scale backs off (reported at the epoch's end).
  if (options_.grad_scaler) loss_.set_check_finite(false);
  // Elastic: a rank that became the group's rank 0 shows the progress from here on.
  auto take_over_progress = [&](std::int64_t at) {
    if (!is_lead() || !progress_wanted_ || options_.show_progress) return;
    options_.show_progress = true;
    bar = ProgressBar(stdout, options_.log_interval, -1);
    bar.start_epoch(epoch, options_.epochs, steps, at);
  };
  PendingLosses pending;
  const std::int64_t capacity =
      options_.accumulation * std::max<std::int64_t>(1, std::min(options_.log_interval, steps));
  bool deferred = false;  // the model's device is not host-accessible: read losses at log points
  std::string device_name;
  // Reads the pending losses back into the history and the epoch sum; returns the last one. On a
  // device the Loss's own finite check (a readback per step) is off, so it is done here, late.
  auto read_back = [&](std::int64_t last_step) {
    const std::vector<double> losses = pending.read_back();
    for (std::size_t i = 0; i < losses.size(); ++i) {
      const double v = losses[i];
      if (deferred && guard.saved && !std::isfinite(v)) {
        const auto back = static_cast<std::int64_t>(losses.size() - 1 - i);
        COHORT_FAIL("Trainer: the loss of step ", last_step - back + 1, " of epoch ", epoch,
                    " (global step ", global_step_ - back, ") is ", std::isnan(v) ? "nan" : "inf",
                    "; on ", device_name, " losses are read back every ", options_.log_interval,
                    " steps (log interval), so ", back, " more step", back == 1 ? "" : "s",
                    " ran after it. A label outside the classes shows as a nan loss there; the "
                    "DataLoader checks labels on the host");
      }
      loss_sum += v;
      history_.push_back(v);
    }
    return history_.empty() ? 0.0 : history_.back();  // the newest step loss read back
  };
  for (std::int64_t step = first; step < steps; ++step) {
    if (options_.elastic) {
      if (options_.elastic->grow_due(global_step_)) {
        elastic_grow(train, epoch, r, loss_sum);
        count_steps(r.steps);
      }
      if (const parallel::MembershipChange* c = options_.elastic->replay_at(global_step_)) {
        const auto& keep = c->new_members;
        if (std::find(keep.begin(), keep.end(), options_.elastic->launch_rank()) == keep.end()) {
          options_.elastic->leave();
          left_group_ = true;
          std::printf("rank %d leaves the group at step %lld (replay of membership %lld)\n",
                      options_.elastic->launch_rank(), static_cast<long long>(global_step_),
                      static_cast<long long>(c->epoch));
          return r;
        }
        step = elastic_recover(
                   train, epoch, r,
                   "replay of membership " + std::to_string(c->epoch) + ": " + c->reason, true) -
               1;
        count_steps(step + 1);
        take_over_progress(step + 1);
        continue;
      }
      elastic_mark();
    }
    // The whole step as one span on the "steps" track (the profile's ProfilerStep#N).
    const std::int64_t step_t0 = trace::enabled() ? trace::now_us() : -1;
    const std::int64_t pending_before = pending.count, samples_before = samples;
    std::int64_t k_done = 0;
    std::vector<std::int64_t> step_samples;  // for after_step
    try {
      // Micro-batches in this step: `accumulation`, fewer only when the epoch has fewer batches.
      const std::int64_t k_this = std::max<std::int64_t>(
          1, std::min(options_.accumulation, micro - step * options_.accumulation));
      for (std::int64_t k = 0; k < k_this; ++k) {
        const bool got = timer_.time(
            "data", [&] { return train.next(batch); }, "data");
        if (!got) break;
        optim::GradScaler* const scaler = options_.grad_scaler;
        // batch.weight: an elastic group's uneven split of the global batch (1 otherwise).
        const float scale = (scaler ? scaler->scale() : 1.0f) /
                            static_cast<float>(options_.accumulation) *
                            static_cast<float>(batch.weight);
        // Only the step's last micro-batch synchronises gradients across replicas (a no-op for a
        // plain model).
        model_.set_grad_sync(k + 1 >= k_this);
        const autocast amp(batch.images.device(), options_.amp);
        timer_.time("forward", [&] {
          Tensor out = model_.forward(batch.images);
          if (!deferred && !out.device().host_accessible()) {
            deferred = true;
            device_name = out.device().name();
            loss_.set_check_finite(false);
          }
          // MixUp / CutMix (DataLoaderOptions::batch_transform): the soft targets.
          pending.add(loss_.forward(out, batch.targets.defined() ? batch.targets : batch.labels),
                      capacity);
        });
        timer_.time("backward", [&] { model_.backward(loss_.backward(scale), false); });
        samples += batch.images.dim(0);
        if (after_step)
          step_samples.insert(step_samples.end(), batch.samples.begin(), batch.samples.end());
        ++k_done;
      }
      model_.set_grad_sync(true);
      if (k_done == 0) break;
      pending.end_step(k_done);
      if (ddp_) {  // reporting only: both are already inside backward
        timer_.add_within("comm", "backward", ddp_->last_step().comm_wait_s);
        timer_.add_within("overlap", "backward", ddp_->last_step().overlap_s);
      }
      optim::GradScaler* const scaler = options_.grad_scaler;
      if (scaler)
        timer_.time("optimizer", [&] { scaler->unscale(opt_); });  // before the hook and clipping
      const bool skip = scaler && scaler->found_inf();
      if (after_backward) after_backward();
      if (options_.max_grad_norm > 0 && !skip) {
        timer_.time("clip", [&] {
          r.grad_norm = with_context(
              "Trainer (clipping the gradients of step " + std::to_string(step + 1) + " of epoch " +
                  std::to_string(epoch) + ", global step " + std::to_string(global_step_ + 1) + ")",
              [&] {
                if (ddp_ && ddp_->options().zero_stage > 0)  // the norm over every rank's shard
                  return ddp_->clip_grad_norm(options_.max_grad_norm, options_.grad_norm_type,
                                              options_.error_if_nonfinite);
                return nn::clip_grad_norm(params, options_.max_grad_norm, options_.grad_norm_type,
                                          options_.error_if_nonfinite);
              });
        });
        if (!std::isfinite(r.grad_norm) && ++r.nonfinite_grad_norms <= 3 && is_lead())
          std::fprintf(
              stderr,
              "Trainer: step %lld of epoch %lld (global step %lld): the total gradient norm "
              "is %s; the gradients were scaled by max_grad_norm / norm as torch does "
              "(error_if_nonfinite stops instead)%s\n",
              static_cast<long long>(step + 1), static_cast<long long>(epoch),
              static_cast<long long>(global_step_ + 1), std::isnan(r.grad_norm) ? "nan" : "inf",
              r.nonfinite_grad_norms == 3 ? "; further such steps this epoch are counted, "
                                            "not printed"
                                          : "");
      }
      timer_.time("optimizer", [&] {
        const ScaledLr lr(opt_, elastic_lr_factor());  // elastic, each rank's batch kept
        if (scaler) {
          if (!scaler->step(opt_)) ++r.skipped_steps;
          scaler->update();
        } else {
          opt_.step();
        }
        opt_.zero_grad();
      });
    } catch (const Error& e) {
      if (!options_.elastic || !elastic_failure(e)) throw;
      model_.set_grad_sync(true);
      pending.count = pending_before;  // the discarded step's losses
      samples = samples_before;
      step = elastic_recover(train, epoch, r, e.what(), false) - 1;
      count_steps(step + 1);
      take_over_progress(step + 1);
      continue;
    }
    if (sched_ && options_.scheduler_interval == SchedulerInterval::step) sched_->step();
    if (options_.ema && step % options_.ema_steps == 0) {  // torchvision: i % model_ema_steps
      options_.ema->update(ddp_ ? ddp_->module() : model_);
      if (epoch - 1 < options_.ema_warmup_epochs) options_.ema->reset();
    }
    timer_.end_step();
    ++global_step_;
    if (elastic_) elastic_step_done();
    if (step_t0 >= 0)
      trace::record("step " + std::to_string(global_step_), "steps", step_t0,
                    trace::now_us() - step_t0);
    ++r.steps;
    run_status::note_step(global_step_);
    // A step checkpoint. Also at the epoch's last step when fit evaluates before its epoch-end
    // save (a rank can die in the evaluation). Every rank takes part: the loss sum so far is
    // averaged over them.
    if (options_.checkpoint_every_steps > 0 && global_step_ % options_.checkpoint_every_steps == 0 &&
        !(step + 1 == steps && epoch_save_follows_)) {
      read_back(step);  // a device's pending losses: the sum must be complete
      save_checkpoint_now(train, epoch - 1, step + 1, r, loss_sum, false);
    }
    if (is_lead()) report_saves(options_.show_progress ? &bar : nullptr);
    const bool log_point = (step + 1) % options_.log_interval == 0 || step + 1 == steps;
    const double step_loss = deferred && !log_point ? 0.0 : read_back(step);
    if (after_step) after_step(global_step_, step_samples);  // the loss is in the history now
    if (deferred && !log_point) continue;
    const double elapsed = seconds_since(t0);
    const double ips =
        elapsed > 0 ? static_cast<double>(samples * options_.world_size) / elapsed : 0;
    if (options_.show_progress) bar.update(step, step_loss, ips);
    if (log_point) {
      std::vector<std::pair<std::string, double>> scalars = {
          {"loss", step_loss}, {"lr", opt_.lr()}, {"images_per_s", ips}};
      if (options_.max_grad_norm > 0) scalars.emplace_back("grad_norm", r.grad_norm);
      log_scalars("train", scalars);
      std::vector<std::pair<std::string, double>> row = {{"step", static_cast<double>(global_step_)},
                                                         {"epoch", static_cast<double>(epoch)}};
      row.insert(row.end(), scalars.begin(), scalars.end());
      metrics_.write("train", row, {{"phase_ms", timer_.mean_ms()}});
    }
  }
  read_back(r.steps - 1);  // steps left pending when the epoch ended early
  if (options_.show_progress && is_lead()) report_saves(&bar);
  if (options_.show_progress) bar.end_epoch();
  const double elapsed = seconds_since(t0);
  train_seconds_ += elapsed;
  train_samples_ += samples;
  r.train_loss = r.steps ? loss_sum / static_cast<double>(r.steps) : 0.0;
  if (reduce_metric) r.train_loss = reduce_metric(r.train_loss);
  r.images_per_s = elapsed > 0 ? static_cast<double>(samples * options_.world_size) / elapsed : 0.0;
  r.bad_samples = report_bad_samples(train, "epoch " + std::to_string(epoch));
  // Loss scaling's skipped steps (the same on every rank: the inf check follows the all-reduce).
  if (options_.grad_scaler && r.skipped_steps > 0 && is_lead()) {
    const bool all = r.skipped_steps >= r.steps;
    std::fprintf(stderr,
                 "Trainer: grad scaler skipped %lld of %lld steps in epoch %lld (inf or NaN "
                 "gradients); its scale is now %g%s\n",
                 static_cast<long long>(r.skipped_steps), static_cast<long long>(r.steps),
                 static_cast<long long>(epoch), static_cast<double>(options_.grad_scaler->scale()),
                 all ? ": no step of the epoch was taken, so the gradients are not finite at any "
                       "scale tried; look for NaN in the loss or the data, or a learning rate "
                       "that diverged"
                     : "");
  }
  return r;
}

// Rows of `out` ([N, classes]) whose label's output is among the 5 largest: fewer than 5 outputs
// larger than it (a NaN counts as larger, as argmax takes NaN as the maximum).
std::int64_t Trainer::top5_hits(const Tensor& out, const std::vector<std::int64_t>& labels) {
  const std::int64_t n = out.dim(0), c = out.numel() / std::max<std::int64_t>(n, 1);
  Tensor f = out;
  if (out.dtype() != DType::f32) {  // under autocast
    f = Tensor::empty(out.shape(), DType::f32, out.device());
    ops::cast(out, f);
  }
  const std::vector<float> v = f.to_vector<float>();
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = v.data() + i * c;
    const std::int64_t y = labels[static_cast<std::size_t>(i)];
    if (y < 0 || y >= c) continue;
    const float t = row[y];
    std::int64_t above = 0;
    for (std::int64_t k = 0; k < c && above < 5; ++k)
      above += k != y && (row[k] > t || (std::isnan(row[k]) && !std::isnan(t)));
    hits += above < 5;
  }
  return hits;
}

// Samples replaced because they failed to read (skip_bad_samples), reported on stderr by every
// rank (each reads its own shard); returns how many.
std::int64_t Trainer::report_bad_samples(const data::DataLoader& loader, const std::string& when) const {
  const std::vector<data::BadSample> bad = loader.bad_samples();
  if (bad.empty()) return 0;
  std::string what;
  for (std::size_t i = 0; i < bad.size() && i < 5; ++i)
    what += "\n  sample " + std::to_string(bad[i].index) + ": " + bad[i].error;
  if (bad.size() > 5) what += "\n  ... and " + std::to_string(bad.size() - 5) + " more";
  std::fprintf(stderr,
               "Trainer (rank %d): skipped %zu unreadable sample%s in %s, each replaced by the "
               "next sample of the data set that reads (skip_bad_samples):%s\n",
               rank(), bad.size(), bad.size() == 1 ? "" : "s", when.c_str(), what.c_str());
  return static_cast<std::int64_t>(bad.size());
}

EvalResult Trainer::evaluate(data::DataLoader& test) {
  trace::Span span("evaluate", "compute");
  if (elastic_ && comm_ && (test.rank() != rank() || test.world_size() != world_size()))
    test.shard(rank(), world_size(), false);  // the group changed since the last evaluation
  else if (comm_)
    shard_loader(test, rank(), world_size(), false, "test");
  model_.eval();
  // No layer keeps its input for a backward that never comes: activations are freed layer by
  // layer, so evaluating a large batch needs about two layers' activations, not all of them.
  nn::NoGradGuard no_grad;
  test.set_epoch(0);
  EvalResult r;
  double loss_sum = 0;
  data::Batch batch;
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t batches = test.num_batches();
  // Off a terminal about four lines per pass, at most one per log interval.
  ProgressBar bar(stdout, options_.log_interval, options_.show_progress ? -1 : 0);
  if (options_.show_progress)
    // With several ranks the running figures are the lead rank's shard's until the sums below
    // combine every rank's: the label says so, lest its last line read as the result.
    bar.start_eval(batches,
                   std::min(options_.log_interval, std::max<std::int64_t>(1, (batches + 3) / 4)),
                   world_size() > 1 ? "evaluate (rank 0's shard)" : "evaluate");
  std::int64_t done = 0;
  while (test.next(batch)) {
    Tensor out;
    {
      const autocast amp(batch.images.device(), options_.amp);
      out = model_.forward(batch.images);
    }
    loss_.forward(out, batch.labels);
    const std::int64_t n = batch.images.dim(0);
    loss_sum +=
        loss_.value() * (loss_.reduction() == nn::Reduction::mean ? static_cast<double>(n) : 1.0);
    Tensor pred = Tensor::empty({n}, DType::i64, out.device());
    ops::argmax(out, pred);
    const auto p = pred.to_vector<std::int64_t>();
    const auto l = batch.labels.to_vector<std::int64_t>();
    for (std::size_t i = 0; i < p.size(); ++i) r.correct += p[i] == l[i];
    r.correct5 += top5_hits(out, l);
    r.samples += n;
    if (options_.show_progress && r.samples > 0) {
      const double elapsed = seconds_since(t0);
      char acc[32];
      std::snprintf(acc, sizeof acc, "acc %.2f%%",
                    100.0 * static_cast<double>(r.correct) / static_cast<double>(r.samples));
      bar.update(done, loss_sum / static_cast<double>(r.samples),
                 elapsed > 0 ? static_cast<double>(r.samples * world_size()) / elapsed : 0, acc);
    }
    ++done;
  }
  if (options_.show_progress) bar.end_epoch();
  r.bad_samples = report_bad_samples(test, "evaluation");
  timer_.add_outside("evaluate", seconds_since(t0));
  model_.train();
  // The host's caching allocator now holds blocks of the evaluation's batch size, which training's
  // sizes do not reuse: give them back, so that the process does not keep the evaluation's peak
  // while it trains (the blocks training uses come back within one step).
  if (Device* dev = model_.device(); dev && dev->type() == DeviceType::host) dev->empty_cache();
  if (comm_ && comm_->size() > 1) {  // every rank evaluated its shard: sum them
    double sums[4] = {loss_sum, static_cast<double>(r.correct), static_cast<double>(r.samples),
                      static_cast<double>(r.correct5)};
    with_context("Trainer::evaluate (summing loss and accuracy over the ranks)", [&] {
      comm::allreduce_host(*comm_, model_.device(), sums, 4, DType::f64, comm::ReduceOp::sum);
    });
    loss_sum = sums[0];
    r.correct = std::llround(sums[1]);
    r.samples = std::llround(sums[2]);
    r.correct5 = std::llround(sums[3]);
  } else if (reduce_metric &&
             options_.distributed_eval) {  // sums across ranks, via the average the hook computes
    loss_sum = reduce_metric(loss_sum) * static_cast<double>(options_.world_size);
    r.correct = std::llround(reduce_metric(static_cast<double>(r.correct)) *
                             static_cast<double>(options_.world_size));
    r.samples = std::llround(reduce_metric(static_cast<double>(r.samples)) *
                             static_cast<double>(options_.world_size));
    r.correct5 = std::llround(reduce_metric(static_cast<double>(r.correct5)) *
                              static_cast<double>(options_.world_size));
  }
  r.loss = r.samples ? loss_sum / static_cast<double>(r.samples) : 0.0;
  r.accuracy = r.samples ? static_cast<double>(r.correct) / static_cast<double>(r.samples) : 0.0;
  r.accuracy5 = r.samples ? static_cast<double>(r.correct5) / static_cast<double>(r.samples) : 0.0;
  return r;
}

CheckpointLoad Trainer::resume(const std::string& path) {
  nn::Module& plain = ddp_ ? ddp_->module() : model_;
  CheckpointLoad got = load_checkpoint(path, plain, opt_, sched_);
  restore_ema(got);
  epochs_done_ = got.progress.epoch;
  global_step_ = got.progress.global_step;
  resumed_ = got.progress;
  resume_pending_ = true;
  resume_checked_ = false;
  if (options_.grad_scaler) {  // the scaler's state travels as run.grad_scaler.<torch's key>
    optim::StateDict st;
    st.kind = "GradScaler";
    for (const auto& [k, v] : got.progress.run)
      if (k.rfind("grad_scaler.", 0) == 0)
        st.scalars[k.substr(12)] = detail::parse_exact(got.model_path, "run." + k, v);
    if (!st.scalars.empty()) {
      try {
        options_.grad_scaler->load_state(st);
      } catch (const Error& e) {
        COHORT_FAIL("Trainer: the grad scaler state in ", got.model_path, " does not load: ",
                    e.why());
      }
    }
  }
  run_status::note_resumed(global_step_);
  return got;
}

std::vector<EpochResult> Trainer::fit(data::DataLoader& train, data::DataLoader* test,
                                      std::int64_t first_epoch) {
  // A rank that joined a running elastic group takes the group's state, not a checkpoint's.
  if (options_.elastic && options_.elastic->joined() && !joined_state_) {
    elastic_receive_state();
    dir_checked_ = true;
  }
  if (!options_.checkpoint_dir.empty() && !dir_checked_) resume_from_dir();
  if (resume_pending_) {  // also when no epoch is left to run: a finished run resumed wrongly
    if (!options_.elastic) shard_loader(train, rank(), world_size(), true, "training");
    check_resume(train);
  }
  if (first_epoch == 0) first_epoch = epochs_done_ + 1;
  epoch_save_follows_ = !checkpoint_file_.empty() && test == nullptr;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{epoch_save_follows_};
  COHORT_CHECK(first_epoch >= 1, "Trainer::fit: first epoch must be >= 1, got ", first_epoch);
  std::vector<EpochResult> results;
  for (std::int64_t epoch = first_epoch; epoch <= options_.epochs; ++epoch) {
    // The budget is spent, unless a save from the budget's last step is resumed: its epoch still
    // has its evaluation, scheduler step and epoch-end checkpoint to do.
    const bool unfinished_epoch =
        resume_pending_ && resumed_.step_in_epoch > 0 && epoch == resumed_.epoch + 1;
    if (options_.max_steps > 0 && global_step_ >= options_.max_steps && !unfinished_epoch) break;
    EpochResult r = train_epoch(train, epoch);
    if (left_group_) break;  // elastic replay: this rank left
    // Batch-norm running statistics drift apart during an epoch (each rank's forward updates them
    // with its own batch after DDP's broadcast). PyTorch's DDP copies rank 0's buffers in every
    // forward, evaluation included; here all ranks take rank 0's once, at the epoch's end, so the
    // evaluation, the checkpoint and the ranks' weights digests agree (the test shards are uneven,
    // so a broadcast per evaluation forward could not pair up). A DDP built with
    // broadcast_buffers = false keeps each rank's own statistics, as PyTorch's does.
    if (ddp_ && ddp_->options().broadcast_buffers) ddp_->sync_buffers();
    if (test) {
      r.eval = evaluate(*test);
      if (options_.ema) {  // the averaged weights in the model for one evaluation, then back
        nn::Module& plain = ddp_ ? ddp_->module() : model_;
        options_.ema->swap(plain);
        try {
          r.eval_ema = evaluate(*test);
        } catch (...) {
          options_.ema->swap(plain);
          throw;
        }
        options_.ema->swap(plain);
        metrics_.write("eval_ema", {{"epoch", static_cast<double>(epoch)},
                                    {"test_loss", r.eval_ema.loss},
                                    {"accuracy", r.eval_ema.accuracy},
                                    {"accuracy5", r.eval_ema.accuracy5}});
        log_scalars("eval_ema", {{"loss", r.eval_ema.loss},
                                 {"accuracy", r.eval_ema.accuracy},
                                 {"accuracy5", r.eval_ema.accuracy5}});
      }
      metrics_.write("eval", {{"epoch", static_cast<double>(epoch)},
                              {"step", static_cast<double>(global_step_)},
                              {"test_loss", r.eval.loss},
                              {"accuracy", r.eval.accuracy},
                              {"accuracy5", r.eval.accuracy5},
                              {"images_per_s", r.images_per_s}});
    }
    std::vector<std::pair<std::string, double>> epoch_scalars = {
        {"loss", r.train_loss}, {"images_per_s", r.images_per_s}};
    for (const auto& [phase, ms] : timer_.mean_ms())
      epoch_scalars.emplace_back("phase_ms_" + phase, ms);
    log_scalars("epoch", epoch_scalars);
    if (test)
      log_scalars("eval", {{"loss", r.eval.loss},
                           {"accuracy", r.eval.accuracy},
                           {"accuracy5", r.eval.accuracy5}});
    if (sched_ && options_.scheduler_interval == SchedulerInterval::epoch) sched_->step();
    epochs_done_ = epoch;
    // On disk before after_epoch runs (a hook may read it); mid-epoch saves do not wait.
    if (!checkpoint_file_.empty()) save_checkpoint_now(train, epoch, 0, r, 0, true);
    if (tensorboard_) tensorboard_->flush();
    results.push_back(r);
    if (after_epoch) after_epoch(r);
  }
  writer_.wait();
  if (is_lead()) report_saves(nullptr);
  if (!options_.report_path.empty() && !left_group_) write_report();
  return results;
}


}  // namespace cohort::train
