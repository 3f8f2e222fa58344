// The shape of a sample through the DataLoader's transforms: every stage's input shape, and for
// data sets of images of different sizes where the size becomes fixed (docs/ARCHITECTURE.md,
// "Images of different sizes through the data layer"). Internal to cohort::data.
#pragma once

#include <cstddef>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/data/transforms.hpp"

namespace cohort::data::detail {
// The input shape of each transform and the final one (stage_shapes); for a data set of images
// of different sizes, the transforms before `variable_until` see each sample's own shape (their
// entries are empty) and the one before it fixes the size. Throws naming the data set when no
// transform fixes it.
Shape transformed_shapes(const Dataset& dataset, const std::vector<TransformPtr>& transforms,
                         std::vector<Shape>& stage_shapes, std::size_t& variable_until);
}  // namespace cohort::data::detail
