// Checkpoints a PyTorch user can read, and that resume training exactly.
//
//  - The model: MODEL.safetensors with the state_dict (PyTorch names and layouts), so
//      model.load_state_dict(safetensors.torch.load_file("MODEL.safetensors"))
//    works for the same architecture in PyTorch.
//  - The training state: MODEL.state.safetensors (the companion file) with the optimizer's
//    buffers as tensors ("optimizer.state.0.exp_avg", ...) and every scalar as metadata text
//    (optimizer hyper-parameters and step counts, the scheduler, epoch, global step, and each
//    Dropout's seed and step so random masks continue where they stopped).
//
// Both writes are atomic (temporary file, fsync, rename): a crash mid-save leaves the previous
// file intact. The state records the digest of the model's weights (nn::state_digest) and
// load_training_state refuses a model that holds other weights, so a model file and a state
// file from different saves cannot be resumed together; save_checkpoint/load_checkpoint below
// keep the pair whole through a crash at any point. Loading validates everything before it changes
// anything: a corrupt file, or names and shapes that do not match the model, is an error naming the
// file and the key, and the model is left as it was.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/layers/module.hpp"
#include "cohort/optim/lr_scheduler.hpp"
#include "cohort/optim/optimizer.hpp"
#include "cohort/train/safetensors.hpp"

namespace cohort::train {

struct ShardedSnapshot;  // sharded_checkpoint.hpp

void save_model(const std::string& path, const nn::Module& model);
void load_model(const std::string& path, nn::Module& model);

struct TrainingProgress {
  TrainingProgress() = default;
  // {epoch, global_step} as before mid-epoch saves existed; the rest optional.
  TrainingProgress(std::int64_t epochs_done, std::int64_t steps_done, std::int64_t step_in_epoch_ = 0,
                   std::map<std::string, std::string> run_ = {})
      : epoch(epochs_done), global_step(steps_done), step_in_epoch(step_in_epoch_),
        run(std::move(run_)) {}
  std::int64_t epoch = 0;          // epochs completed
  std::int64_t global_step = 0;    // optimizer steps completed
  // Optimizer steps of epoch `epoch + 1` completed: > 0 for a save taken mid-epoch
  // (TrainerOptions::checkpoint_every_steps), 0 for one taken at an epoch's end.
  std::int64_t step_in_epoch = 0;
  // Whatever else decides the rest of the run, as exact text (metadata "run.<key>"): the Trainer
  // keeps the world size, the data-parallel mode, the loader's seed and shuffling, the
  // accumulation and the epoch's running loss here, and refuses a resume that contradicts them.
  std::map<std::string, std::string> run;
  // Tensors of the run's other state (the Trainer's exponential moving average: "model_ema.<name>"),
  // saved as "extra.<key>" in the training state and given back on load (on the optimizer's device).
  std::map<std::string, Tensor> extra;
};
// The companion file's path for a model file: "m.safetensors" -> "m.state.safetensors".
std::string state_path_for(const std::string& model_path);

void save_training_state(const std::string& path, const nn::Module& model,
                         const optim::Optimizer& optimizer, const optim::Scheduler* scheduler,
                         const TrainingProgress& progress);
// Restores optimizer, scheduler and the model's random-number positions; returns the progress.
TrainingProgress load_training_state(const std::string& path, nn::Module& model,
                                     optim::Optimizer& optimizer, optim::Scheduler* scheduler);

// The model file and its training state as one checkpoint that a crash cannot break: both are
// written under temporary names first, the current pair is kept as PATH.prev and
// PATH's-state.prev (hard links) until the new pair has taken the names, and then removed.
// Whatever instant the writer dies at, load_checkpoint finds a whole pair: the new one, or the
// previous one.
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, const optim::Scheduler* scheduler,
                     const TrainingProgress& progress);

// A checkpoint copied into host memory: all that save_checkpoint reads from the model, optimizer,
// scheduler and Dropout layers. Taking it is the only part of a save that must stop training (a
// copy of the weights and the optimizer's buffers); write_checkpoint then needs nothing else and
// can run on any thread while training goes on.
struct CheckpointSnapshot {
  std::vector<io::SafetensorsEntry> model;      // the state_dict
  std::vector<io::SafetensorsEntry> optimizer;  // "optimizer.<key>" buffers
  std::map<std::string, std::string> state;     // the training state's metadata (digest: at write)
  std::int64_t global_step = 0;
  bool epoch_end = false;                       // taken at an epoch's end (step_in_epoch 0)
  std::size_t bytes() const;                    // tensor bytes held
};
// `reuse`: an earlier snapshot whose buffers are filled again where the sizes match
// (CheckpointWriter::reclaim).
CheckpointSnapshot snapshot_checkpoint(const nn::Module& model, const optim::Optimizer& optimizer,
                                       const optim::Scheduler* scheduler,
                                       const TrainingProgress& progress,
                                       CheckpointSnapshot reuse = {});
// save_checkpoint's crash-safe writes of the pair, from a snapshot.
void write_checkpoint(const std::string& path, const CheckpointSnapshot& snapshot);

// Background checkpoint writes, one at a time: save() waits for the previous write to finish
// (rethrowing its error), then writes the snapshot on a thread of its own and returns. A crash
// at any point leaves the newest whole pair that write_checkpoint had completed. The destructor
// waits for a write in flight (without throwing: call wait() to see its error).
class CheckpointWriter {
 public:
  struct Timing {
    std::int64_t step = -1;    // the save's global step
    bool epoch_end = false;    // an epoch's end save (else one every N steps)
    double wait_s = 0;         // the training thread waited this long for the previous write
    double copy_s = 0;         // ... and this long for the snapshot (as the caller measured it)
    double write_s = 0;        // the write itself, in the background
    std::size_t bytes = 0;
  };
  CheckpointWriter() = default;
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  ~CheckpointWriter();
  // Returns how long it waited for the previous write. `copy_s` and `waited_s`: how long taking
  // the snapshot took, and how long the caller already waited for the previous write (wait()
  // then reclaim(), to copy into the last snapshot's memory), reported with the write's timing.
  double save(const std::string& path, CheckpointSnapshot snapshot, double copy_s = 0,
              double waited_s = 0);
  // The same for a sharded checkpoint's snapshot (sharded_checkpoint.hpp): this rank's file, and
  // on rank 0 the wait for the others' and the publication, in the background.
  double save_sharded(ShardedSnapshot snapshot, double copy_s = 0, double waited_s = 0);
  // Rank 0's sharded write in flight stops waiting for the shards still missing and fails
  // (nothing published, the previous checkpoint stands): an elastic group lost the ranks that
  // would have written them. A write whose shards are all there publishes as usual. Returns at
  // once; wait() then reports the outcome.
  void give_up_missing_shards();
  // The memory of the last snapshot written, once its write is done (else empty): for
  // snapshot_checkpoint to fill again.
  CheckpointSnapshot reclaim();
  // Waits for the write in flight; rethrows its error. Returns its timing (step -1: none).
  Timing wait();
  // The oldest finished write not yet taken, without waiting (step -1: none); each finished
  // write is returned once, in order.
  Timing take_finished();
  bool busy() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::shared_ptr<std::atomic<bool>> give_up_;  // the sharded write in flight's
  // One write at a time: waits for the previous one, then runs `write` on the writer's thread.
  double start(Timing timing, std::function<void()> write, double waited_s);
};

struct CheckpointLoad {
  TrainingProgress progress;
  std::string model_path;  // the pair it came from: `path`, or previous_path_for(path)
};
// Loads the newest whole pair: PATH and its state if they load and belong together (the state
// records the digest of the weights it was saved with), else the previous pair. Throws naming
// both attempts when neither is whole.
CheckpointLoad load_checkpoint(const std::string& path, nn::Module& model,
                               optim::Optimizer& optimizer, optim::Scheduler* scheduler);
// Whether any file of the pair at `path` or of its previous pair exists: a run would resume from
// it (or fail to, naming what is missing), never overwrite it unread.
bool has_checkpoint_files(const std::string& path);
// "m.safetensors" -> "m.safetensors.prev".
std::string previous_path_for(const std::string& path);

}  // namespace cohort::train
