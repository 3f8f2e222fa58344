// CIFAR-10 binary format: records of 1 label byte + 3072 pixel bytes (1024 R, 1024 G, 1024 B,
// row-major 32x32), files data_batch_1..5.bin (train) and test_batch.bin (test).
#pragma once

#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/data/idx.hpp"

namespace cohort::data {

class Cifar10Dataset final : public Dataset {
 public:
  // Reads every file in order; each must be a non-empty whole number of 3073-byte records with
  // labels < 10 (errors name the file, its size and the record at fault).
  explicit Cifar10Dataset(const std::vector<std::string>& files);

  std::int64_t size() const override { return n_; }
  Shape sample_shape() const override { return Shape{3, 32, 32}; }
  std::int64_t num_classes() const override { return 10; }
  std::int64_t get(std::int64_t index, float* out) const override;
  std::string describe() const override { return description_; }

 private:
  std::int64_t n_ = 0;
  std::vector<std::uint8_t> records_;
  std::string description_;
};

// DIR/data_batch_{1..5}.bin or DIR/test_batch.bin.
std::shared_ptr<Cifar10Dataset> load_cifar10_dir(const std::string& dir, Split split);

}  // namespace cohort::data
