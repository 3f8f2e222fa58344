// What the Trainer keeps for elastic training (internal: trainer.cpp destroys it,
// trainer_elastic.cpp fills it).
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

}  // namespace cohort::train
