// Trainer (see trainer.hpp): its construction (the options checked), evaluate's cross-rank sums,
// and fit's order per epoch (train, buffer sync, evaluate, scalars, per-epoch scheduler step,
// checkpoint, hooks) until the epochs or the step budget run out. train_epoch's step loop is in
// trainer_epoch.cpp, checkpoints and resuming in trainer_checkpoint.cpp, the run report in
// trainer_report.cpp, the elastic parts in trainer_elastic.cpp. The rules they follow for
// distributed runs and GPU loss readback are in docs/TRAINING.md.
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
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/progress.hpp"
#include "cohort/train/run_report.hpp"
#include "cohort/train/sharded_checkpoint.hpp"
#include "metadata_text.hpp"
#include "trainer_elastic.hpp"
#include "trainer_loop.hpp"

namespace cohort::train {
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
      // Its checkpoints are sharded (train/sharded_checkpoint.hpp): a directory of one file per
      // rank, in checkpoint_dir/sharded, that loads on any number of ranks.
      COHORT_CHECK(options_.checkpoint_path.empty(), why,
                   "whose optimizer state is split over "
                   "the ranks: its checkpoints are sharded, one file per rank in a directory; "
                   "give checkpoint_dir (--checkpoint-dir) instead of checkpoint_path");
      if (!options_.checkpoint_dir.empty()) {
        sharded_checkpoints_ = true;
        checkpoint_file_ = options_.checkpoint_dir + "/sharded";
      }
      // Elastic: a lost rank's shard is rebuilt from the newest sharded checkpoint, resharded
      // onto the survivors (trainer_elastic_sharded.cpp).
      if (options_.elastic) {
        COHORT_CHECK(sharded_checkpoints_, why,
                     "and elastic: a rank that dies takes its shard "
                     "of the state with it, which the survivors rebuild from the newest sharded "
                     "checkpoint; give checkpoint_dir (--checkpoint-dir), and checkpoint_every_"
                     "steps (--checkpoint-every) for fewer steps to train again");
        COHORT_CHECK(!options_.elastic->options().keep_rank_batch, why,
                     "and elastic with each "
                     "rank's batch kept (--elastic-batch per-rank): the survivors go back to a "
                     "checkpoint, whose epoch layout that mode would change; keep the global "
                     "batch (the default)");
      }
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

// ZeRO stage 3: every forward gathers the units (collectives), so every rank must run as many
// as the others. The test shards are not padded and can differ by a batch: agreed before the
// first forward, the most any rank has; a rank with fewer then repeats its last batch, the result
// dropped (what PyTorch's Join context does for FSDP). Otherwise: this rank's `batches`.
std::int64_t Trainer::sharded_eval_forwards(std::int64_t batches) {
  if (!ddp_ || ddp_->options().zero_stage < 3 || !comm_ || comm_->size() < 2) return batches;
  std::int64_t most_least[2] = {batches, -batches};  // one max: the most, and minus the least
  with_context("Trainer::evaluate (the most test batches a rank has, for ZeRO stage 3)", [&] {
    comm::allreduce_host(*comm_, model_.device(), most_least, 2, DType::i64, comm::ReduceOp::max);
  });
  COHORT_CHECK(most_least[0] == 0 || most_least[1] < 0,
               "Trainer::evaluate: a rank has no test "
               "batch and another has ",
               most_least[0],
               ": at zero_stage 3 every rank runs the "
               "same forwards, so the test set needs at least one sample per rank (",
               world_size(), " ranks)");
  return most_least[0];
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
  const std::int64_t forwards = sharded_eval_forwards(batches);
  Tensor last;  // the last batch's images: ZeRO stage 3's extra forwards below
  while (test.next(batch)) {
    last = batch.images;
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
  for (; done < forwards; ++done) {  // ZeRO stage 3: as many forwards as the rank with the most
    const autocast amp(last.device(), options_.amp);
    model_.forward(last);
  }
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
  CheckpointLoad got;
  if (sharded_checkpoints_) {
    ShardedLoad l = load_sharded_checkpoint(path, *ddp_, opt_, sched_);
    got.progress = std::move(l.progress);
    got.model_path = l.dir;
  } else {
    got = load_checkpoint(path, plain, opt_, sched_);
  }
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
  elastic_first_checkpoint(train);  // ZeRO: a lost rank's shard comes from a checkpoint
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
