// What the losses share beyond the Loss base: the class-index target check of CrossEntropyLoss
// and NLLLoss, and the reduction of per-element losses to the [] result. Internal header of
// layers/ (not installed); defined in loss.cpp.
#pragma once

#include <string>

#include "cohort/core/tensor.hpp"

namespace cohort::nn::detail {

// Throws, naming `loss`, unless input is [N, C] (`input_kind`: "logits", "log-probabilities")
// and target is [N] of class indices (i64).
void check_class_targets(const std::string& loss, const Tensor& input, const Tensor& target,
                         const char* input_kind);

// scale * (the sum of every element of `terms`), as a [] tensor on their device: one row-sum
// over `terms` flattened to [1, numel], then one scaling, in place.
Tensor reduce_rows(const Tensor& terms, float scale);

}  // namespace cohort::nn::detail
