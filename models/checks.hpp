// Shared argument checks of the zoo's constructors (one message format for every model).
// Internal header of models/ (not installed).
#pragma once

#include <string>

#include "cohort/core/error.hpp"
#include "cohort/models/config.hpp"

namespace cohort::models::detail {

// classes >= 1, channels >= 1, image_size >= 1 and a multiple of `multiple` (the model's total
// pooling factor, so its flattened feature count is exact).
inline void check_config(const char* model, const ModelConfig& c, std::int64_t multiple) {
  COHORT_CHECK(c.num_classes >= 1, model, ": num_classes must be >= 1, got ", c.num_classes);
  COHORT_CHECK(c.in_channels >= 1, model, ": in_channels must be >= 1, got ", c.in_channels);
  COHORT_CHECK(c.image_size >= multiple && c.image_size % multiple == 0, model,
               ": image_size must be a positive multiple of ", multiple, ", got ", c.image_size);
}

}  // namespace cohort::models::detail
