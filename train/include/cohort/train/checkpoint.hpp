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

#include <cstdint>
#include <string>

#include "cohort/layers/module.hpp"
#include "cohort/optim/lr_scheduler.hpp"
#include "cohort/optim/optimizer.hpp"

namespace cohort::train {

void save_model(const std::string& path, const nn::Module& model);
void load_model(const std::string& path, nn::Module& model);

struct TrainingProgress {
  std::int64_t epoch = 0;        // epochs completed
  std::int64_t global_step = 0;  // optimizer steps completed
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

struct CheckpointLoad {
  TrainingProgress progress;
  std::string model_path;  // the pair it came from: `path`, or previous_path_for(path)
};
// Loads the newest whole pair: PATH and its state if they load and belong together (the state
// records the digest of the weights it was saved with), else the previous pair. Throws naming
// both attempts when neither is whole.
CheckpointLoad load_checkpoint(const std::string& path, nn::Module& model,
                               optim::Optimizer& optimizer, optim::Scheduler* scheduler);
// "m.safetensors" -> "m.safetensors.prev".
std::string previous_path_for(const std::string& path);

}  // namespace cohort::train
