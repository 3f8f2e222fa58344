// A data set whose samples say who they are (the data tests' shared fixture): sample i is every
// pixel i, with label i % 10, so what a batch holds can be read from its images.
#pragma once

#include <cstdint>
#include <string>

#include "cohort/data/dataset.hpp"

namespace data_test {

class Ids final : public cohort::data::Dataset {
 public:
  explicit Ids(std::int64_t n) : n_(n) {}
  std::int64_t size() const override { return n_; }
  cohort::Shape sample_shape() const override { return {1, 1, 1}; }
  std::int64_t num_classes() const override { return 10; }
  std::int64_t get(std::int64_t i, float* out) const override {
    out[0] = static_cast<float>(i);
    return i % 10;
  }
  std::string describe() const override { return "ids"; }

 private:
  std::int64_t n_;
};

}  // namespace data_test
