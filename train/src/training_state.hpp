// A training state's parts that every checkpoint kind shares (internal to train/): its metadata
// made from a run (checkpoint.cpp's training-state file, the sharded checkpoint's index) and that
// metadata applied back to a run, checked before anything changes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cohort/train/checkpoint.hpp"

namespace cohort::train::detail {

// The training state's metadata (all but the weights' digest), with the optimizer's buffers
// ("optimizer.state.<i>.<buffer>") and progress.extra ("extra.<key>") copied into `tensors`,
// which may hold an earlier snapshot's entries: they are filled again in place.
std::map<std::string, std::string> state_metadata(const nn::Module& model,
                                                  const optim::Optimizer& optimizer,
                                                  const optim::Scheduler* scheduler,
                                                  const TrainingProgress& progress,
                                                  std::vector<io::SafetensorsEntry>* tensors);

// `md` (as state_metadata made it) with the optimizer's tensors ("state.<i>.<buffer>") and the
// extra tensors applied: the optimizer's and scheduler's states and every Dropout's seed and step
// validated first, then set. `path` names the source in errors. Returns the progress.
TrainingProgress apply_training_state(const std::string& path,
                                      const std::map<std::string, std::string>& md,
                                      std::map<std::string, Tensor> optimizer_tensors,
                                      std::map<std::string, Tensor> extra, nn::Module& model,
                                      optim::Optimizer& optimizer, optim::Scheduler* scheduler);

}  // namespace cohort::train::detail
