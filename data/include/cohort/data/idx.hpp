// MNIST-format IDX files (MNIST, Fashion-MNIST, KMNIST, ...), gzip-compressed or plain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"

namespace cohort::data {

// One IDX file, fully validated: magic (0x00 0x00 type ndim), element type (only unsigned byte,
// 0x08, is used by these data sets), dimensions, and length (header + product of dimensions,
// after decompression). Errors name the file and the expected and found sizes.
struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> values;
};
IdxArray read_idx(const std::string& path);

// Images [N, H, W] and labels [N] from two IDX files; labels must be < 10 (or < num_classes).
class IdxDataset final : public Dataset {
 public:
  IdxDataset(const std::string& images_path, const std::string& labels_path,
             std::int64_t num_classes = 10, std::string label = "IDX");

  std::int64_t size() const override { return n_; }
  Shape sample_shape() const override { return Shape{1, h_, w_}; }
  std::int64_t num_classes() const override { return classes_; }
  std::int64_t get(std::int64_t index, float* out) const override;
  std::string describe() const override { return description_; }

  const std::vector<std::uint8_t>& labels() const { return labels_; }

 private:
  std::int64_t n_ = 0, h_ = 0, w_ = 0, classes_ = 10;
  std::vector<std::uint8_t> images_, labels_;
  std::string description_;
};

enum class Split { train, test };

// The MNIST-layout directory DIR with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (gzip
// preferred when both exist). A missing directory or file is an error naming the path and what
// was looked for.
std::shared_ptr<IdxDataset> load_mnist_dir(const std::string& dir, Split split);

// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace cohort::data
