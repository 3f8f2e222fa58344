// The shape chain of a sample through the transforms (sample_shape.hpp) and its public form,
// transformed_sample_shape (dataloader.hpp).
#include "sample_shape.hpp"

#include "cohort/core/error.hpp"
#include "cohort/data/dataloader.hpp"

namespace cohort::data {

namespace detail {
Shape transformed_shapes(const Dataset& dataset, const std::vector<TransformPtr>& transforms,
                         std::vector<Shape>& stage_shapes, std::size_t& variable_until) {
  for (const auto& tr : transforms) COHORT_CHECK(tr != nullptr, "DataLoader: a transform is null");
  stage_shapes.clear();
  variable_until = 0;
  Shape s = dataset.sample_shape();
  if (dataset.variable_size()) {
    std::size_t first = 0;
    while (first < transforms.size() && !transforms[first]->fixes_size()) ++first;
    COHORT_CHECK(first < transforms.size(), "DataLoader: ", dataset.describe(),
                 " holds images of different sizes, and none of the ", transforms.size(),
                 " transforms fixes the size: add random_resized_crop, center_crop or "
                 "resize(height, width) before batching");
    // The size-fixing transform's output for an image of the data set's channels (its own
    // check of each image comes with every sample).
    s = transforms[first]->output_shape(Shape{s[0], 1, 1});
    variable_until = first + 1;
    stage_shapes.assign(first + 1, Shape{});
  }
  stage_shapes.push_back(s);
  for (std::size_t t = variable_until; t < transforms.size(); ++t) {
    s = transforms[t]->output_shape(s);
    stage_shapes.push_back(s);
  }
  return s;
}
}  // namespace detail

Shape transformed_sample_shape(const Dataset& dataset, const std::vector<TransformPtr>& transforms) {
  std::vector<Shape> stages;
  std::size_t variable_until = 0;
  return detail::transformed_shapes(dataset, transforms, stages, variable_until);
}

}  // namespace cohort::data
