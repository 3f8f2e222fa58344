// The flags every training example hands to the Trainer, and the TrainerOptions they make: one
// mapping, so mnist_cnn and the zoo programs (zoo_train.cpp) cannot drift apart. Each program
// registers the flags itself (its own help texts and defaults) into a Flags that derives from
// TrainerFlags. Header-only (the examples' own code).
#pragma once

#include <cstdint>
#include <string>

#include "cohort/train/trainer.hpp"

namespace examples {

struct TrainerFlags {
  std::int64_t epochs = 1, log_interval = 10;
  std::int64_t max_steps = -1;  // -1: every step of the epoch
  std::string save_model;       // --save-model: checkpoint after every epoch
  std::string metrics;          // --metrics: JSON Lines
  std::string tensorboard;      // --tensorboard: event files in DIR
};

// Given a DDP module the Trainer does the distributed rest: shards the loaders, averages the
// metrics, prints, writes metrics and TensorBoard files on rank 0 only. Checkpoints: the newest
// whole pair (model + training state) after every epoch, on rank 0; a crash mid-save leaves the
// previous one.
inline cohort::train::TrainerOptions trainer_options(const TrainerFlags& f) {
  cohort::train::TrainerOptions o;
  o.epochs = f.epochs;
  o.log_interval = f.log_interval;
  o.max_steps = f.max_steps;
  o.metrics_path = f.metrics;
  o.tensorboard_dir = f.tensorboard;
  o.checkpoint_path = f.save_model;
  return o;
}

}  // namespace examples
