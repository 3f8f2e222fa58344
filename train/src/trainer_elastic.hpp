// What the Trainer keeps for elastic training (internal: trainer.cpp destroys it,
// trainer_elastic.cpp fills it), and the learning-rate scaling of a step.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "cohort/layers/dropout.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::train {

struct Trainer::ElasticState {
  std::vector<std::pair<nn::Dropout*, std::uint64_t>> rng;      // each Dropout's step at the mark
  std::vector<Tensor> buffers, saved;                           // the model's buffers, and copies
  std::chrono::steady_clock::time_point changed{};              // end of the last change (report)
  double detect_s = -1, agree_s = 0, build_s = 0, state_s = 0;  // the last change's parts
  bool report = false;
  bool planned = false;  // the last change was a replayed one
};

// Every parameter group's learning rate times `factor` while it lives (an optimizer step), then
// back: elastic training that keeps each rank's batch scales the rate with the group (linear
// scaling) while the scheduler and the checkpoints keep the unscaled one. factor 1: nothing.
class ScaledLr {
 public:
  ScaledLr(optim::Optimizer& opt, double factor) : opt_(opt) {
    if (factor == 1.0) return;
    for (std::size_t g = 0; g < opt_.num_param_groups(); ++g) {
      saved_.push_back(opt_.lr(g));
      opt_.set_lr(g, saved_.back() * factor);
    }
  }
  ~ScaledLr() {
    for (std::size_t g = 0; g < saved_.size(); ++g) opt_.set_lr(g, saved_[g]);
  }
  ScaledLr(const ScaledLr&) = delete;
  ScaledLr& operator=(const ScaledLr&) = delete;

 private:
  optim::Optimizer& opt_;
  std::vector<double> saved_;
};

}  // namespace cohort::train
