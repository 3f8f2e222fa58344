// The flags every training example hands to the Trainer, the TrainerOptions they make and the
// learning-rate schedule they ask for: one mapping, so mnist_cnn and the zoo programs
// (zoo_train.cpp) cannot drift apart. Each program registers the flags it shares through
// add_trainer_flags (its own defaults first) into a Flags that derives from TrainerFlags.
// Header-only (the examples' own code).
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <string>

#include "cohort/optim/grad_scaler.hpp"
#include "cohort/optim/lr_scheduler.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/train/trainer.hpp"
#include "flags.hpp"

namespace examples {

struct TrainerFlags {
  std::int64_t epochs = 1, log_interval = 10;
  std::int64_t max_steps = -1;           // --max-steps: optimizer steps of the whole run
  std::int64_t max_steps_per_epoch = -1; // --max-steps-per-epoch
  std::string save_model;                // --save-model: checkpoint after every epoch
  std::string checkpoint_dir;            // --checkpoint-dir: resume from / save to DIR
  std::int64_t checkpoint_every = 0;     // --checkpoint-every: also every N steps
  bool deterministic = false;            // --deterministic: DDP's deterministic reduction
  std::string elastic;            // --elastic MIN:MAX: survive lost ranks (cohortrun --elastic)
  std::string membership_log;     // --membership-log: the group's changes, JSON Lines
  std::string replay_membership;  // --replay-membership: apply a log's changes at its steps
  std::int64_t elastic_settle_ms = 10000;  // --elastic-settle-ms: wait for a silent rank this long
  std::string elastic_batch = "global";    // --elastic-batch global|per-rank: what a change keeps
  int elastic_step_failures = 3;           // --elastic-step-failures: a poison batch's limit
  std::string amp = "off";               // --amp bf16|f16|off: autocast (TrainerOptions::amp)
  std::string metrics;                   // --metrics: JSON Lines
  std::string tensorboard;               // --tensorboard: event files in DIR
  std::string profile_dir;  // --profile-dir: the trace for TensorBoard's profiler plugin
  // The recipe: schedule, warm-up, clipping, label smoothing.
  std::string schedule = "steplr";       // --schedule steplr|cosine
  std::string scheduler_interval = "epoch";  // --scheduler-interval epoch|step
  std::int64_t warmup_steps = 0;         // --warmup-steps: linear warm-up over N optimizer steps
  double clip_grad_norm = 0;             // --clip-grad-norm: max total 2-norm (0: off)
  double label_smoothing = 0;            // --label-smoothing (cross entropy)
  int zero_stage = 0;                    // --zero-stage: DDPOptions::zero_stage
  int shard_group_size = 0;              // --shard-group-size: DDPOptions::shard_group_size
};

// The warm-up's first factor of the lr (torchvision's reference recipes' lr_warmup_decay).
constexpr double kWarmupStartFactor = 0.01;

// Registers the shared flags. `schedules` says whether the program offers --schedule cosine.
inline void add_trainer_flags(CLI::App& app, TrainerFlags& f, bool schedules) {
  app.add_option("--epochs", f.epochs, "number of epochs to train")->check(kPositive);
  app.add_option("--log-interval", f.log_interval, "batches between progress lines")
      ->check(kPositive);
  app.add_option("--max-steps", f.max_steps,
                 "stop the run after N optimizer steps in all (the epoch that reaches N ends "
                 "there, is evaluated and checkpointed)")
      ->check(kPositive);
  app.add_option("--max-steps-per-epoch", f.max_steps_per_epoch,
                 "end each epoch after N optimizer steps (what --max-steps meant before "
                 "2026-11-26)")
      ->check(kPositive);
  app.add_option("--save-model", f.save_model,
                 "save the model (safetensors) and training state after each epoch");
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "keep checkpoints in DIR and resume from the newest one there at start (a "
                 "restarted job continues where it stopped; DIR is created if missing)");
  app.add_option("--checkpoint-every", f.checkpoint_every,
                 "with --checkpoint-dir: also checkpoint every N optimizer steps, in the "
                 "background (0: at epochs' ends only)")
      ->check(kNonNegative);
  app.add_flag("--deterministic", f.deterministic,
               "data parallel: reduce gradients in a fixed order, so a run (and a resumed run) "
               "is bit-identical whatever the timing");
  app.add_option("--elastic", f.elastic,
                 "MIN:MAX ranks: when a rank dies the survivors agree on a new group and go on "
                 "(--elastic-batch says what is kept); needs cohortrun --elastic "
                 "(docs/LAUNCH.md)");
  app.add_option("--membership-log", f.membership_log,
                 "elastic: append every change of the group (step, old and new ranks, reason) to "
                 "FILE as JSON Lines");
  app.add_option("--replay-membership", f.replay_membership,
                 "elastic: apply the changes of a membership log at its steps (ranks it drops "
                 "leave), to check that a run with failures matches its replay");
  app.add_option("--elastic-settle-ms", f.elastic_settle_ms,
                 "elastic: how long the survivors wait for a rank that neither checks in nor is "
                 "known dead (a stopped process, a host cut off) before declaring it dead")
      ->check(kPositive);
  app.add_option("--elastic-batch", f.elastic_batch,
                 "elastic: what a change of group keeps: global (default: the global batch, "
                 "more samples per rank when fewer ranks, same learning rate) or per-rank (each "
                 "rank's batch, the global batch shrinks, the learning rate scales with the "
                 "ranks)")
      ->check(CLI::IsMember({"global", "per-rank"}));
  app.add_option("--elastic-step-failures", f.elastic_step_failures,
                 "elastic: when the group loses ranks this many times in a row on the same step "
                 "(a poison batch), name the batch and stop (0: never)")
      ->check(kNonNegative);
  app.add_option("--amp", f.amp,
                 "mixed precision: convolutions and GEMMs compute in bf16 or f16 (autocast), "
                 "weights, gradients and the optimizer stay f32; f16 adds a GradScaler; off "
                 "(default)")
      ->check(CLI::IsMember({"bf16", "f16", "off"}));
  app.add_option("--metrics", f.metrics, "write metrics as JSON Lines to FILE");
  app.add_option("--tensorboard", f.tensorboard,
                 "write TensorBoard scalars to DIR (tensorboard --logdir DIR)");
  app.add_option("--profile-dir", f.profile_dir,
                 "write the run's trace (steps, data, forward, backward, optimizer, DDP "
                 "communication) to DIR/<host>_rank<N>.<ms>.pt.trace.json, the layout of "
                 "torch.profiler.tensorboard_trace_handler (tensorboard --logdir DIR with the "
                 "torch-tb-profiler plugin)");
  if (schedules)
    app.add_option("--schedule", f.schedule,
                   "steplr: lr x gamma every epoch (default); cosine: cosine annealing to 0 over "
                   "the run (after the warm-up)")
        ->check(CLI::IsMember({"steplr", "cosine"}));
  app.add_option("--scheduler-interval", f.scheduler_interval,
                 "step the schedule after every epoch (default) or every optimizer step "
                 "(implied by --warmup-steps)")
      ->check(CLI::IsMember({"epoch", "step"}));
  app.add_option("--warmup-steps", f.warmup_steps,
                 "linear learning-rate warm-up from 0.01 x lr over N optimizer steps, then the "
                 "schedule (SequentialLR)")
      ->check(kNonNegative);
  app.add_option("--clip-grad-norm", f.clip_grad_norm,
                 "clip the total gradient 2-norm to this value each step (0: off)")
      ->check(kNonNegative);
  app.add_option("--label-smoothing", f.label_smoothing,
                 "cross-entropy label smoothing in [0, 1] (0: off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--zero-stage", f.zero_stage,
                 "data parallel: 1 shards the optimizer state over the ranks (ZeRO stage 1: "
                 "gradients reduce-scattered, each rank updates its 1/n, parameters all-gathered; "
                 "with --deterministic the same bits as 0); 2 shards the gradients too (no "
                 "whole gradient kept between steps); 3 shards the parameters too (each "
                 "layer's gathered for its forward and its backward, freed after: FSDP's "
                 "FULL_SHARD); 0: plain DDP (default)")
      ->check(CLI::Range(0, 3));
  app.add_option("--shard-group-size", f.shard_group_size,
                 "with --zero-stage: hybrid sharding (FSDP's HYBRID_SHARD): shard only inside "
                 "groups of N consecutive ranks (one host, say), replicated across the groups; N "
                 "must divide the ranks (0: shard over all of them, default)")
      ->check(kNonNegative);
}

// The parameters the optimizer updates: the model's (those that require a gradient), or with
// --zero-stage this rank's shards of them (DistributedDataParallel::shard_parameters); after
// building the optimizer over them, zero_attach() hands it to the DDP.
inline std::vector<cohort::ParameterPtr> optimizer_parameters(
    const TrainerFlags& f, const std::vector<cohort::ParameterPtr>& params,
    cohort::parallel::DistributedDataParallel* ddp) {
  if (f.zero_stage == 0 || ddp == nullptr) return params;
  return ddp->shard_parameters(params);
}
// What the first line says of --zero-stage: "ZeRO stage 2: optimizer state and gradients / 4".
// With --shard-group-size: "... / 2 (hybrid: 2 replicas of 2-rank shard groups)".
inline std::string zero_note(int stage, int world, int shard_group_size = 0) {
  const char* what = stage >= 3   ? "optimizer state, gradients and parameters"
                     : stage == 2 ? "optimizer state and gradients"
                                  : "optimizer state";
  if (shard_group_size <= 0 || shard_group_size >= world)
    return "ZeRO stage " + std::to_string(stage) + ": " + what + " / " + std::to_string(world);
  return "ZeRO stage " + std::to_string(stage) + ": " + what + " / " +
         std::to_string(shard_group_size) +
         " (hybrid: " + std::to_string(world / shard_group_size) + " replicas of " +
         std::to_string(shard_group_size) + "-rank shard groups)";
}
// The DDP options every program takes from its flags: --deterministic, --zero-stage,
// --shard-group-size (each program adds its own, such as gradient compression).
inline cohort::parallel::DDPOptions ddp_options(const TrainerFlags& f) {
  cohort::parallel::DDPOptions o;
  o.deterministic = f.deterministic;
  o.zero_stage = f.zero_stage;
  o.shard_group_size = f.shard_group_size;
  return o;
}
inline void zero_attach(const TrainerFlags& f, cohort::optim::Optimizer& opt,
                        cohort::parallel::DistributedDataParallel* ddp) {
  if (f.zero_stage > 0 && ddp != nullptr) ddp->attach_optimizer(opt);
}

// The GradScaler --amp f16 needs (torch.amp.GradScaler's defaults), or nullptr: the program owns
// it for the Trainer's lifetime and passes it as TrainerOptions::grad_scaler.
inline std::unique_ptr<cohort::optim::GradScaler> amp_scaler(const TrainerFlags& f) {
  if (f.amp != "f16") return nullptr;
  return std::make_unique<cohort::optim::GradScaler>();
}

// Given a DDP module the Trainer does the distributed rest: shards the loaders, averages the
// metrics, prints, writes metrics and TensorBoard files on rank 0 only. Checkpoints: the newest
// whole pair (model + training state) after every epoch, on rank 0; a crash mid-save leaves the
// previous one.
inline cohort::train::TrainerOptions trainer_options(const TrainerFlags& f) {
  cohort::train::TrainerOptions o;
  o.epochs = f.epochs;
  o.log_interval = f.log_interval;
  o.max_steps = f.max_steps;
  o.max_steps_per_epoch = f.max_steps_per_epoch;
  o.metrics_path = f.metrics;
  o.tensorboard_dir = f.tensorboard;
  o.checkpoint_path = f.save_model;
  o.checkpoint_dir = f.checkpoint_dir;
  o.checkpoint_every_steps = f.checkpoint_every;
  o.max_grad_norm = f.clip_grad_norm;
  o.amp = f.amp == "bf16" ? cohort::DType::bf16 : f.amp == "f16" ? cohort::DType::f16 : cohort::DType::f32;
  o.scheduler_interval = f.scheduler_interval == "step" || f.warmup_steps > 0
                             ? cohort::train::SchedulerInterval::step
                             : cohort::train::SchedulerInterval::epoch;
  return o;
}

// The schedule the flags ask for, on `opt` (whose lr is the peak): StepLR(gamma per epoch) or
// cosine annealing to 0 over the run, after a linear warm-up of --warmup-steps when given.
// Per-step schedules count optimizer steps: `steps_per_epoch` is this rank's.
inline std::unique_ptr<cohort::optim::Scheduler> make_scheduler(const TrainerFlags& f,
                                                                cohort::optim::Optimizer& opt,
                                                                double gamma,
                                                                std::int64_t steps_per_epoch) {
  namespace optim = cohort::optim;
  const bool per_step = trainer_options(f).scheduler_interval ==
                        cohort::train::SchedulerInterval::step;
  std::int64_t per_epoch = std::max<std::int64_t>(1, steps_per_epoch);
  if (f.max_steps_per_epoch > 0) per_epoch = std::min(per_epoch, f.max_steps_per_epoch);
  std::int64_t total = per_step ? f.epochs * per_epoch : f.epochs;
  if (per_step && f.max_steps > 0) total = std::min(total, f.max_steps);
  COHORT_CHECK(f.warmup_steps < total || f.warmup_steps == 0, "--warmup-steps ", f.warmup_steps,
               " leaves nothing of the run's ", total, " optimizer steps");
  const std::int64_t warmup = f.warmup_steps;
  const auto main_schedule = [&]() -> std::unique_ptr<optim::Scheduler> {
    if (f.schedule == "cosine")
      return std::make_unique<optim::CosineAnnealingLR>(opt, std::max<std::int64_t>(1, total - warmup));
    return std::make_unique<optim::StepLR>(opt, per_step ? per_epoch : 1, gamma);
  };
  if (warmup == 0) return main_schedule();
  std::vector<std::unique_ptr<optim::Scheduler>> parts;
  parts.push_back(std::make_unique<optim::LinearLR>(opt, kWarmupStartFactor, 1.0, warmup));
  parts.push_back(main_schedule());
  return std::make_unique<optim::SequentialLR>(opt, std::move(parts),
                                               std::vector<std::int64_t>{warmup});
}

// The rest of the schedule line: ", clip grad norm 1, label smoothing 0.1, amp bf16".
inline std::string describe_recipe(const TrainerFlags& f) {
  const auto g = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  std::string s;
  if (f.clip_grad_norm > 0) s += ", clip grad norm " + g(f.clip_grad_norm);
  if (f.label_smoothing > 0) s += ", label smoothing " + g(f.label_smoothing);
  if (f.amp != "off") s += ", amp " + f.amp + (f.amp == "f16" ? " with a GradScaler" : "");
  return s;
}

// A one-line description of the schedule for the run's first lines.
inline std::string describe_schedule(const TrainerFlags& f, double gamma) {
  const auto g = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  std::string s = f.schedule == "cosine" ? "cosine annealing" : "StepLR gamma " + g(gamma);
  if (f.warmup_steps > 0)
    s = std::to_string(f.warmup_steps) + " warm-up step" + (f.warmup_steps == 1 ? "" : "s") +
        ", then " + s;
  s += trainer_options(f).scheduler_interval == cohort::train::SchedulerInterval::step
           ? " (per step)"
           : " (per epoch)";
  return s + describe_recipe(f);
}

}  // namespace examples
