// What every zoo model is parameterised by: classes, input channels and input size (square).
#pragma once

#include <cstdint>

namespace cohort::models {

struct ModelConfig {
  std::int64_t num_classes = 10;
  std::int64_t in_channels = 3;
  std::int64_t image_size = 32;  // H = W of the input; each model states what it accepts
};

}  // namespace cohort::models
