// The training loop, kept thin: per-epoch train and evaluate over DataLoaders, gradient
// accumulation, gradient clipping, schedules stepped per epoch or per step, a total step budget,
// per-phase timing, progress, metrics, TensorBoard and checkpoints, and a few generic hooks; it exists so every example reports the same way. Given a DistributedDataParallel
// model (or TrainerOptions::communicator) it sets up the rest of a distributed run itself; on a
// GPU it reads step losses back only at log points. The rules of both, and of one step, are in
// docs/TRAINING.md ("One training step", "Data parallel training with the Trainer", "Loss
// readback on a GPU").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/error.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/layers/loss.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/optim/grad_scaler.hpp"
#include "cohort/optim/lr_scheduler.hpp"
#include "cohort/optim/optimizer.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/elastic.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/ema.hpp"
#include "cohort/train/metrics.hpp"
#include "cohort/train/phase_timer.hpp"
#include "cohort/train/progress.hpp"
#include "cohort/train/tensorboard.hpp"

namespace cohort::train {

// When the Trainer steps the scheduler (Lightning's `interval`): after every epoch, or after
// every optimizer step (warm-up, per-step cosine, OneCycleLR).
enum class SchedulerInterval { epoch, step };

struct TrainerOptions {
  std::int64_t epochs = 1;
  std::int64_t log_interval = 10;      // steps between progress lines and metrics rows
  // Optimizer steps of the whole run at most (-1: no limit), as Lightning's and Hugging Face's
  // max_steps: counted by global_step(), so a resumed run stops at the same step. The epoch that
  // reaches it ends there (evaluation, scheduler step and checkpoint still run) and fit() returns.
  std::int64_t max_steps = -1;
  // Optimizer steps per epoch at most (-1: all); what max_steps meant before 2026-11-26.
  std::int64_t max_steps_per_epoch = -1;
  std::int64_t accumulation = 1;       // micro-batches per optimizer step
  SchedulerInterval scheduler_interval = SchedulerInterval::epoch;
  // > 0: after the step's backward (and after_backward), nn::clip_grad_norm(parameters,
  // max_grad_norm, grad_norm_type, error_if_nonfinite) before the optimizer: on the averaged
  // gradients under DDP (every rank clips alike), once per accumulated step. 0: no clipping.
  double max_grad_norm = 0;
  double grad_norm_type = 2.0;         // any p > 0, or infinity
  // A non-finite total gradient norm: throw (naming the step) instead of scaling the gradients by
  // it as torch does; either way the step is reported on stderr.
  bool error_if_nonfinite = false;
  bool show_progress = true;           // progress on stdout (rank 0 only in multi-rank runs)
  std::string metrics_path;            // JSON Lines (rank 0), empty: none
  std::string tensorboard_dir;         // TensorBoard event file in DIR (rank 0), empty: none
  // At the end of fit(), a RunReport (cohort/train/run_report.hpp: backend, ranks, steps,
  // images/s, step and comm ms, final loss, weights digest) written by rank 0 to this file; empty:
  // the COHORT_RUN_REPORT environment variable's value (cohort-swap sets it), else none. With a
  // DistributedDataParallel model, fit() then checks collectively that the ranks' weights agree,
  // so every rank must see the same setting.
  std::string report_path;
  // After every epoch, save_checkpoint(checkpoint_path, ...) of the plain model (the one a DDP
  // wraps), its optimizer and scheduler (rank 0); empty: none. Trainer::resume reads it back.
  std::string checkpoint_path;
  // A directory a restarted run continues from: fit() first resumes from the newest whole
  // checkpoint in DIR when it holds one (every rank reads it, so DIR must be the same directory
  // for every rank: one host, or a shared file system), then saves to DIR/checkpoint.safetensors
  // (+ its .state) at every epoch's end and every checkpoint_every_steps steps. Empty: none. Use
  // it or checkpoint_path, not both. With a DistributedDataParallel at zero_stage 1-3 the
  // checkpoints are sharded (train/sharded_checkpoint.hpp) in DIR/sharded: every rank copies and
  // writes its own share, and they resume on any number of ranks and at any stage.
  std::string checkpoint_dir;
  // > 0: also save every this many optimizer steps (counted by global_step()), mid-epoch included;
  // needs checkpoint_dir or checkpoint_path. Rank 0 copies the state to host memory (the only time
  // training waits) and writes it in the background; a save waits for the previous one. A run
  // resumed from such a save continues at the next step, with the batches, random streams,
  // optimizer and schedule it would have had: it ends bit-identical to an uninterrupted run.
  std::int64_t checkpoint_every_steps = 0;
  // Dynamic loss scaling (torch.amp.GradScaler's semantics; the caller owns it): the loss's
  // gradient is seeded with scale() (/ accumulation); after the step's last backward (and DDP's
  // all-reduce) the gradients are unscaled before after_backward and clipping; a step whose
  // gradients hold an inf or NaN is skipped (not clipped, no optimizer step) and counted in
  // EpochResult::skipped_steps; then the scale is updated. Its state is in the checkpoint. The
  // loss's own finite check is off with it (a NaN loss skips its step, as in PyTorch), and an
  // epoch with skipped steps says so on stderr (how many, the scale; every step skipped: why).
  optim::GradScaler* grad_scaler = nullptr;
  // An exponential moving average of the weights (cohort/train/ema.hpp; the caller owns it, built
  // from the plain model): updated after optimizer step 0, ema_steps, 2 x ema_steps, ... of each
  // epoch (torchvision's --model-ema-steps, default 32), reset after each update of the first
  // ema_warmup_epochs epochs (its --lr-warmup-epochs: the average keeps copying the weights
  // during warm-up); evaluated beside the model after each epoch (EpochResult::eval_ema).
  // Checkpoints hold the averages and their count; a resume restores them exactly (a checkpoint
  // saved without an EMA cannot continue a run that keeps one).
  ExponentialMovingAverage* ema = nullptr;
  std::int64_t ema_steps = 32;
  std::int64_t ema_warmup_epochs = 0;
  // Mixed precision (cohort/core/autocast.hpp): bf16 or f16 runs every forward and backward (and
  // evaluation's forward) inside cohort::autocast(the batch's device, amp), so convolutions and
  // GEMMs compute in that type; f32 (the default) is off. Parameters, gradients, the optimizer and
  // DDP's reduction stay f32. f16 wants a grad_scaler (PyTorch's advice too); bf16 does not.
  DType amp = DType::f32;
  // The data-parallel group. Taken from the model when it is a DistributedDataParallel; set it
  // for a plain model whose gradients are averaged another way (parallel::DistributedOptimizer).
  std::shared_ptr<comm::Communicator> communicator;
  // Without a communicator: the number of ranks images/s counts (ranks synchronised by the
  // caller), and whether evaluate() combines the ranks' figures through reduce_metric. With one,
  // both follow from it.
  std::int64_t world_size = 1;
  bool distributed_eval = false;
  // Elastic training (cohort/parallel/elastic.hpp; the model must be a DistributedDataParallel
  // over elastic->communicator()): a training step whose collective fails because a rank is gone
  // is discarded (no optimizer step: its random streams and buffers are put back), the survivors
  // agree on the new membership, the DDP moves onto the new group (the state of the rank with the
  // most steps), the rest of the epoch is split among them keeping the global batch (each rank
  // takes more samples: DataLoader::regroup), and the step is run again. Failures outside the
  // training steps (evaluation, the epoch's end) are not survived. A replay
  // (ElasticOptions::replay_log) applies the logged changes at their steps instead.
  parallel::ElasticGroup* elastic = nullptr;
};

struct EvalResult {
  double loss = 0;      // mean over samples
  double accuracy = 0;  // fraction correct (top-1: the label is the largest output)
  // Top-5: the label's output is among the 5 largest, i.e. fewer than 5 others are strictly
  // larger (torchvision's reference script's Acc@5; a tie with the label's output counts for the
  // label, and with fewer than 5 classes every row is a hit).
  double accuracy5 = 0;
  std::int64_t correct = 0, correct5 = 0, samples = 0;
  // This rank's samples replaced because they failed to read (skip_bad_samples), reported.
  std::int64_t bad_samples = 0;
};

struct EpochResult {
  std::int64_t epoch = 0;
  double train_loss = 0;     // mean of the epoch's step losses
  double images_per_s = 0;   // all ranks' samples / epoch wall time
  std::int64_t steps = 0;
  double grad_norm = 0;      // the last step's total gradient norm before clipping (0: no clipping)
  std::int64_t nonfinite_grad_norms = 0;  // steps whose gradient norm was NaN or infinite
  std::int64_t skipped_steps = 0;  // steps the grad_scaler skipped (inf or NaN gradients)
  // This rank's samples that failed to read and were replaced (DataLoaderOptions::
  // skip_bad_samples); each is reported on stderr at the end of the epoch.
  std::int64_t bad_samples = 0;
  EvalResult eval;           // zero when no test loader was given
  EvalResult eval_ema;       // the averaged weights' (TrainerOptions::ema), else zero
};

class Trainer {
 public:
  Trainer(nn::Module& model, nn::Loss& loss, optim::Optimizer& optimizer,
          optim::Scheduler* scheduler, TrainerOptions options);
  ~Trainer();

  // Runs epochs first_epoch..options.epochs (1-based, as the PyTorch example counts; 0: the one
  // after the last epoch resume() restored, else 1), each followed by evaluation on `test` when
  // given, the scheduler's epoch step (scheduler_interval = epoch) and the checkpoint; stops early
  // once global_step() reaches max_steps. Returns one result per epoch run. Collective: with a
  // communicator every rank must call it (and pass a test loader, or none, alike).
  std::vector<EpochResult> fit(data::DataLoader& train, data::DataLoader* test = nullptr,
                               std::int64_t first_epoch = 0);
  // Restores model, optimizer, scheduler and step count from a checkpoint written by
  // options.checkpoint_path, checkpoint_dir (or save_checkpoint): the newest whole pair at `path`.
  // Every rank reads the file. Returns what it loaded (epochs and steps completed, and which file
  // of the pair: `path` or its .prev); fit() continues after it: with the next epoch, or within
  // the saved epoch at its next step for a mid-epoch save. fit (or the first train_epoch) refuses
  // to continue a mid-epoch save in a run that contradicts it (world size, data-parallel mode,
  // accumulation, the loader's seed, shuffling or batches per epoch) with a message naming both
  // values; after an epoch-end save such changes are allowed, and said on stderr.
  CheckpointLoad resume(const std::string& path);
  // The file checkpoint_path or checkpoint_dir saves to ("" without either).
  const std::string& checkpoint_file() const { return checkpoint_file_; }
  // Every checkpoint written so far (rank 0), in order: its step, how long training waited (for
  // the previous write, and for the copy to host memory), the write's time in the background.
  const std::vector<CheckpointWriter::Timing>& checkpoint_saves() const { return saves_; }
  // One epoch of training (the loader's epoch is set to epoch - 1 for shuffling). Per optimizer
  // step: data -> forward (model + loss) -> backward -> after_backward -> optimizer (step +
  // zero_grad); with accumulation = k, k micro-batches (loss scaled by 1/k), all but the last
  // with model.set_grad_sync(false) (DDP: no_sync).
  EpochResult train_epoch(data::DataLoader& train, std::int64_t epoch);
  // Loss and accuracy in eval mode (no gradients, dropout off, batch-norm running stats), with a
  // progress line (batches, running loss and accuracy of this rank's shard, images/s, ETA) and
  // its time in the phase table as "evaluate". Collective with a communicator of several ranks:
  // each rank evaluates its shard of `test` and the sums are all-reduced, so every rank must call
  // it and gets the same result.
  EvalResult evaluate(data::DataLoader& test);

  // --- hooks ---
  // Signatures as declared; each runs on every rank (guard with is_lead() for output or files).
  // After the last backward of each optimizer step, before clipping (max_grad_norm) and the
  // optimizer (gradient statistics, custom clipping, extra timer rows). Gradients are final here:
  // averaged across ranks under DDP.
  std::function<void()> after_backward;
  // After each optimizer step that counts (after the optimizer and a step checkpoint; never for a
  // step elastic training discarded): its global step and the dataset indices this rank trained
  // on in it (every micro-batch's, in order). For audits of which samples a run saw, and for
  // progress lines of one's own: the step's loss is loss_history().back() (on a GPU only at the
  // log points, log_interval, where losses are read back).
  std::function<void(std::int64_t, const std::vector<std::int64_t>&)> after_step;
  // After every epoch (for checkpoints); gets the result, already evaluated.
  std::function<void(const EpochResult&)> after_epoch;
  // Combines a per-rank value into the global one; with a communicator of several ranks it
  // defaults to an all-reduce average over them, else to the identity.
  std::function<double(double)> reduce_metric;

  int rank() const;        // in the communicator's group; 0 without one
  int world_size() const;  // ranks whose samples images/s counts
  bool is_lead() const { return rank() == 0; }  // rank 0: prints, writes files
  // Elastic: this rank left the group in a replay (fit returned early; it has nothing more to do).
  bool left_group() const { return left_group_; }

  PhaseTimer& timer() { return timer_; }
  // The loss of every optimizer step so far (the cost history); on a GPU as of the last readback
  // (docs/TRAINING.md), complete whenever train_epoch has returned.
  const std::vector<double>& loss_history() const { return history_; }
  std::int64_t global_step() const { return global_step_; }
  void set_global_step(std::int64_t s) { global_step_ = s; }
  // Images per second over all epochs run so far (training phases only).
  double images_per_s() const;

 private:
  class EpochRun;  // train_epoch's state and the phases of its steps (trainer_epoch.cpp)
  std::int64_t sharded_eval_forwards(std::int64_t batches);  // evaluate at ZeRO stage 3
  static std::int64_t top5_hits(const Tensor& out, const std::vector<std::int64_t>& labels);
  void restore_ema(const CheckpointLoad& got);
  std::int64_t report_bad_samples(const data::DataLoader& loader, const std::string& when) const;
  nn::Module& model_;
  nn::Loss& loss_;
  optim::Optimizer& opt_;
  optim::Scheduler* sched_;
  TrainerOptions options_;
  PhaseTimer timer_;
  MetricsWriter metrics_;
  std::vector<double> history_;
  std::int64_t global_step_ = 0;
  std::int64_t epochs_done_ = 0;  // restored by resume()
  comm::Communicator* comm_ = nullptr;
  parallel::DistributedDataParallel* ddp_ = nullptr;
  std::unique_ptr<SummaryWriter> tensorboard_;
  void log_scalars(const std::string& prefix, const std::vector<std::pair<std::string, double>>& v);
  void write_report();  // options_.report_path, at the end of fit()
  // Checkpoints (trainer_checkpoint.cpp).
  std::string checkpoint_file_;
  CheckpointWriter writer_;
  std::vector<CheckpointWriter::Timing> saves_;
  TrainingProgress resumed_;     // what resume() loaded; applied by the next train_epoch
  bool resume_pending_ = false;
  bool dir_checked_ = false;     // fit() looked for a checkpoint in checkpoint_dir
  bool sharded_checkpoints_ = false;  // ZeRO: checkpoint_file_ is a sharded checkpoint's directory
  std::int64_t sharded_saved_step_ = -1;  // the global step of the last sharded save started
  // fit() saves at the epoch's end with no evaluation before it: a step save at the epoch's last
  // step would be written twice.
  bool epoch_save_follows_ = false;
  void resume_from_dir();
  // Refuses a mid-epoch save that contradicts this run (world size, data-parallel mode,
  // accumulation, the loader's seed, shuffling and batches per epoch), before anything changes;
  // for a save at an epoch's end it says what changed (stderr, rank 0) and goes on.
  void check_resume(const data::DataLoader& train);
  bool resume_checked_ = false;
  // The first step of `epoch` to run (0, or a mid-epoch save's next step), the epoch's restored
  // loss sum and gradient-norm figures in `r`; checks the save against this run.
  std::int64_t apply_resume(const data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                            double& loss_sum);
  std::map<std::string, std::string> run_info(const data::DataLoader& train) const;
  // What a checkpoint of this moment records; collective over `avg_over` when step_in_epoch > 0
  // (the epoch's loss sum is averaged over its ranks).
  TrainingProgress progress_now(const data::DataLoader& train, std::int64_t epochs_done,
                                std::int64_t step_in_epoch, const EpochResult& r, double loss_sum,
                                comm::Communicator* avg_over);
  // Collective when step_in_epoch > 0 (the epoch's loss sum is averaged over the ranks); rank 0
  // copies and queues the write. `wait`: return once it is on disk.
  void save_checkpoint_now(const data::DataLoader& train, std::int64_t epochs_done,
                           std::int64_t step_in_epoch, const EpochResult& r, double loss_sum,
                           bool wait);
  void report_saves(ProgressBar* bar);
  double train_seconds_ = 0;
  std::int64_t train_samples_ = 0;
  // Elastic training (trainer_elastic.cpp).
  struct ElasticState;
  std::unique_ptr<ElasticState> elastic_;
  bool left_group_ = false;
  bool elastic_from_replicas_ = false;  // the last loss was rebuilt from live replicas
  bool progress_wanted_ = true;  // options.show_progress as given (rank 0 of a changed group)
  void elastic_mark();           // before a step: what a discarded step must put back
  bool elastic_failure(const Error& e) const;  // a collective failed: a rank may be gone
  // Discards the step in flight, agrees on the new group and moves onto it; returns the step of
  // the epoch to run next. `planned`: a replayed change (no failure).
  std::int64_t elastic_recover(data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                               double& loss_sum, const std::string& why, bool planned);
  // ZeRO (trainer_elastic_sharded.cpp): the lost shard is rebuilt from the newest sharded
  // checkpoint, resharded onto the new group; the epoch goes on from its step. `t_state`: when
  // the new group had its communicator.
  bool elastic_reshards() const;
  parallel::MembershipChange elastic_reshard(data::DataLoader& train, std::int64_t epoch,
                                             EpochResult& r, double& loss_sum,
                                             const std::string& why, bool planned,
                                             std::chrono::steady_clock::time_point& t_state);
  void elastic_first_checkpoint(data::DataLoader& train);  // fit: step 0's, when none exists
  // Hybrid sharding (DDPOptions::shard_group_size): for each shard of the old split, the new
  // rank of the first survivor holding it, when every shard has one and every survivor is at
  // the same step (then the lost rank's chunk is rebuilt from a live replica, no step lost);
  // empty otherwise (the checkpoint's way). `why`: why not.
  std::vector<int> elastic_replica_holders(const parallel::MembershipChange& change,
                                           std::string* why) const;
  // The old split's checkpoint in `dir` (this rank's /dev/shm) on every survivor, each shard's
  // file broadcast over the new group by its holder; collective over the new group.
  void elastic_gather_replicas(const std::string& dir, const std::vector<int>& holders,
                               const data::DataLoader& train, const EpochResult& r,
                               double loss_sum);
  // Growing back with ZeRO: the state goes to the joiners as a sharded checkpoint of the
  // boundary, which the larger group loads resharded (the members' side; the joiners' is
  // elastic_receive_state).
  void elastic_grow_sharded(data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                            double& loss_sum);
  // After resume() of the group's own checkpoint: the epoch's progress as it was saved (its
  // step, loss sum and counts); returns the step of the epoch.
  std::int64_t elastic_take_progress(data::DataLoader& train, std::int64_t epoch, EpochResult& r,
                                     double& loss_sum);
  void elastic_step_done();  // reports the first step after a change
  void elastic_take_group();  // comm_ and the options that follow it: the group's current ones
  // Growing back: the members at the boundary the group grows at (the new group, DDP moved onto
  // it, the state sent from rank 0), and the joiner's side of the state (in fit, first).
  void elastic_grow(data::DataLoader& train, std::int64_t epoch, EpochResult& r, double& loss_sum);
  void elastic_receive_state();
  bool joined_state_ = false;
  std::string joined_layout_;  // the group's DataLoader::layout() a joiner takes (keep_rank_batch)
  // At an epoch's start: the launch's shard regrouped for the group as it is now (a joiner: the
  // group's layout).
  void elastic_epoch_loader(data::DataLoader& train);
  bool keeps_rank_batch() const;
  // The learning rate's factor now: ranks / launched ranks when each rank's batch is kept, else 1.
  double elastic_lr_factor() const;
};

}  // namespace cohort::train
