// A seeded, learnable synthetic data set for benchmarks and tests: each class has a fixed random
// template, and a sample is 0.5 * template + 0.5 * noise, both from Philox. Never used silently in
// place of real data: programs must ask for it by name.
#pragma once

#include "cohort/data/dataset.hpp"

namespace cohort::data {

class SyntheticDataset final : public Dataset {
 public:
  SyntheticDataset(std::int64_t size, Shape sample_shape, std::int64_t num_classes,
                   std::uint64_t seed);

  std::int64_t size() const override { return n_; }
  Shape sample_shape() const override { return shape_; }
  std::int64_t num_classes() const override { return classes_; }
  std::int64_t get(std::int64_t index, float* out) const override;
  std::string describe() const override;

 private:
  std::int64_t n_, classes_;
  Shape shape_;
  std::uint64_t seed_;
};

}  // namespace cohort::data
