// Per-sample transforms applied on the host by the DataLoader, in order. Random transforms draw
// from Philox keyed by (loader seed, epoch, sample index), so a run is reproducible and does not
// depend on batch size, prefetching or how samples are split across ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cohort/core/shape.hpp"

namespace cohort::data {

class Transform {
 public:
  virtual ~Transform() = default;
  // Shape of the output for an input of shape `in` ([C, H, W]); throws when `in` is unsupported.
  virtual Shape output_shape(const Shape& in) const { return in; }
  // Reads `in` (shape `in_shape`), writes `out` (output_shape(in_shape)); in != out.
  virtual void apply(const float* in, const Shape& in_shape, float* out,
                     std::uint64_t random_key) const = 0;
};
using TransformPtr = std::shared_ptr<const Transform>;

// Zero border of `padding` pixels on each side (torchvision's Pad(padding)): Fashion-MNIST's
// 28x28 becomes the CIFAR models' 32x32 with pad(2).
TransformPtr pad(std::int64_t padding);
// A one-channel sample copied into `channels` channels (Grayscale(num_output_channels=3)).
TransformPtr repeat_channels(std::int64_t channels);
// (x - mean[c]) / std[c]; one value broadcasts to every channel.
TransformPtr normalize(std::vector<float> mean, std::vector<float> stddev);
// Pads each side by `padding` with zeros, then takes a random size x size crop.
TransformPtr random_crop(std::int64_t size, std::int64_t padding);
// Mirrors left-right with probability p.
TransformPtr random_horizontal_flip(float p = 0.5f);

}  // namespace cohort::data
