// Datasets: indexable collections of (image, label) samples kept in host memory.
//
// Contract: get(i, out) writes sample i as f32 (pixel / 255 for image data) into `out`, which
// holds sample_shape().numel() floats, and returns its label in [0, num_classes()). It is const
// and thread-safe, so the DataLoader's prefetch thread can call it while the trainer runs. Data
// sets of images of different sizes implement get_sized() instead (below).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/core/shape.hpp"

namespace cohort::data {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  virtual Shape sample_shape() const = 0;  // [C, H, W]
  virtual std::int64_t num_classes() const = 0;
  virtual std::int64_t get(std::int64_t index, float* out) const = 0;
  virtual std::string describe() const = 0;  // "Fashion-MNIST train (60000 x [1, 28, 28]) from DIR"

  // Data sets whose images differ in size (image folders) return true. Their sample_shape() is
  // [C, 0, 0]: the channels, with 0 for the height and width that vary; get() is not used, and
  // get_sized() writes sample `index` into `out` (resized to its [C, H, W], set in `shape`). The
  // DataLoader then needs a transform that fixes the size (Transform::fixes_size) before batching.
  virtual bool variable_size() const { return false; }
  // The classes' names, class i = class_names()[i] (image folders: the folders'); empty when the
  // data set has none. The Trainer writes them into checkpoints (run.data.classes).
  virtual std::vector<std::string> class_names() const { return {}; }
  // Default: a fixed-size data set's get() into `out` resized to sample_shape().
  virtual std::int64_t get_sized(std::int64_t index, std::vector<float>& out, Shape& shape) const {
    shape = sample_shape();
    out.resize(static_cast<std::size_t>(shape.numel()));
    return get(index, out.data());
  }
};

using DatasetPtr = std::shared_ptr<const Dataset>;

}  // namespace cohort::data

namespace cohort::data {
// Samples [begin, end) of `dataset` as a data set of its own (shares the parent's memory).
DatasetPtr subset(DatasetPtr dataset, std::int64_t begin, std::int64_t end);
// torch.utils.data.Subset: the samples at `indices`, in that order (each checked against the
// parent's size).
DatasetPtr subset(DatasetPtr dataset, std::vector<std::int64_t> indices);

// The DataPartitioner of PyTorch's "Writing Distributed Applications" tutorial (and Needle's):
// shuffles the indices with `seed` (the same on every rank), then cuts consecutive parts of
// floor(fraction * size) samples each. Fractions must be in (0, 1] and sum to at most 1; the
// parts never overlap. partition(data, {0.5, 0.5})[rank] gives each of 2 ranks its half.
std::vector<DatasetPtr> partition(DatasetPtr dataset, const std::vector<double>& fractions,
                                  std::uint64_t seed = 1234);
}  // namespace cohort::data
