// Per-sample transforms applied on the host by the DataLoader, in order. Random transforms draw
// from Philox keyed by (loader seed, epoch, sample index), so a run is reproducible and does not
// depend on batch size, prefetching or how samples are split across ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
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
  // True when the output's height and width do not depend on the input's (a crop or resize to a
  // fixed size): images of different sizes (Dataset::variable_size) need one such transform
  // before they can be batched; the transforms before it see each image's own size.
  virtual bool fixes_size() const { return false; }
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

// ---- resampling (torchvision.transforms.v2 on tensors, bilinear with antialias=True) ----
// Bilinear resampling as torchvision's tensor path does it (antialias=True: when shrinking, the
// triangle filter is widened by the scale factor, PIL's and torch's _upsample_bilinear2d_aa
// rule; when enlarging, plain bilinear with align_corners=False).
//
// Resize(size): the shorter side to `size`, the longer scaled by int(size * long / short), as
// torchvision computes it (the output's size depends on the input's).
TransformPtr resize(std::int64_t size);
// Resize([height, width]): to exactly that size.
TransformPtr resize(std::int64_t height, std::int64_t width);
// CenterCrop([height, width]): the centre crop, top = round((H - h) / 2) with Python's rounding
// (half to even); a crop larger than the image pads it with zeros first, as torchvision does.
TransformPtr center_crop(std::int64_t height, std::int64_t width);
inline TransformPtr center_crop(std::int64_t size) { return center_crop(size, size); }
// RandomResizedCrop(size, scale, ratio): a crop of a random area fraction in [scale_min,
// scale_max] and aspect ratio in [ratio_min, ratio_max] (log-uniform), drawn as torchvision's
// get_params does (10 tries, then the central crop that fits the ratio range), resized to
// size x size. Defaults are torchvision's.
TransformPtr random_resized_crop(std::int64_t size, float scale_min = 0.08f,
                                 float scale_max = 1.0f, float ratio_min = 3.0f / 4.0f,
                                 float ratio_max = 4.0f / 3.0f);

// RandomErasing(p, scale, ratio, value) of torchvision, as the reference script applies it after
// Normalize: with probability p a box of a random area fraction in [scale_min, scale_max] and
// aspect ratio (height / width) in [ratio_min, ratio_max] (log-uniform; 10 tries, none fitting
// leaves the image as it was) is set to `value`: one number, one per channel, or, empty,
// standard-normal draws (value="random").
TransformPtr random_erasing(float p = 0.5f, float scale_min = 0.02f, float scale_max = 0.33f,
                            float ratio_min = 0.3f, float ratio_max = 3.3f,
                            std::vector<float> value = {0.0f});

// ---- batch transforms (torchvision.transforms.v2's MixUp and CutMix) ----
// Run on a whole batch once its samples are assembled (DataLoaderOptions::batch_transform): they
// mix each row with the row before it (row 0 with the last: the batch "paired with its roll", as
// torchvision does) and give soft targets, which CrossEntropyLoss takes in place of class
// indices. One draw per batch, keyed by (loader seed, epoch, the batch's first sample), so a run
// is reproducible for any number of worker threads.
class BatchTransform {
 public:
  virtual ~BatchTransform() = default;
  // images: [rows, C, H, W] (batch_shape), mixed in place; labels: rows class indices, each in
  // [0, num_classes()); targets: rows x num_classes() floats, written.
  virtual void apply(float* images, const Shape& batch_shape, const std::int64_t* labels,
                     float* targets, std::uint64_t key) const = 0;
  virtual std::int64_t num_classes() const = 0;
  virtual std::string describe() const = 0;  // "MixUp(alpha=0.2)"
};
using BatchTransformPtr = std::shared_ptr<const BatchTransform>;

// MixUp(alpha, num_classes): lam ~ Beta(alpha, alpha); images = lam x + (1 - lam) roll(x);
// targets = lam onehot(y) + (1 - lam) onehot(roll(y)).
BatchTransformPtr mixup(std::int64_t num_classes, float alpha = 1.0f);
// CutMix(alpha, num_classes): lam ~ Beta(alpha, alpha), a box of side sqrt(1 - lam) of the image
// around a uniform centre (clipped to the image) pasted from roll(x); targets mixed by the box's
// true share of the image.
BatchTransformPtr cutmix(std::int64_t num_classes, float alpha = 1.0f);
// The reference script's RandomChoice([MixUp, CutMix]): one of them per batch, each with
// probability 1/2; an alpha of 0 leaves that one out (both 0: an error).
BatchTransformPtr mixup_or_cutmix(std::int64_t num_classes, float mixup_alpha, float cutmix_alpha);

namespace detail {
// The arithmetic of MixUp and CutMix with lam given, exactly as torchvision's float32 tensors do
// it (two roundings per element, no fused multiply-add): for tests and the transforms above.
void mixup_apply(float* images, const Shape& batch_shape, const std::int64_t* labels,
                 std::int64_t num_classes, double lam, float* targets);
struct CutBox {
  std::int64_t x1, y1, x2, y2;  // columns [x1, x2), rows [y1, y2)
  double lam_adjusted;          // 1 - box area / image area
};
CutBox cutmix_box(std::int64_t height, std::int64_t width, double lam, std::int64_t r_x,
                  std::int64_t r_y);
void cutmix_apply(float* images, const Shape& batch_shape, const std::int64_t* labels,
                  std::int64_t num_classes, const CutBox& box, float* targets);
// A Beta(alpha, alpha) draw from the Philox stream of `key` (Marsaglia and Tsang's gamma method).
double beta_draw(float alpha, std::uint64_t key);

// The box RandomResizedCrop draws for an image of height x width from the draws u[0..21] (each
// uniform in [0, 1): u[2t] and u[2t + 1] try t's area and log ratio, u[20] and u[21] the top and
// left of the box that fits), as torchvision's get_params: {top, left, height, width}. Exposed
// for tests.
struct CropBox {
  std::int64_t top, left, height, width;
};
CropBox random_resized_crop_box(std::int64_t height, std::int64_t width, float scale_min,
                                float scale_max, float ratio_min, float ratio_max,
                                const float* u);
// The checks RandomResizedCrop and RandomErasing share: 0 < scale_min <= scale_max <= 1 and
// 0 < ratio_min <= ratio_max, else an error naming `who` and the pair.
void check_scale_ratio(const char* who, float scale_min, float scale_max, float ratio_min,
                       float ratio_max);
// The box RandomErasing draws (torchvision's get_params: h from area x ratio, w from area /
// ratio, a try fits when h < height and w < width), from the same draws as
// random_resized_crop_box; none fitting: the whole image.
CropBox random_erasing_box(std::int64_t height, std::int64_t width, float scale_min,
                           float scale_max, float ratio_min, float ratio_max, const float* u);
// Resamples the box of `in` ([C, H, W]) to [C, out_h, out_w] into `out` (bilinear, antialias
// as above); parts of the box outside the image read as 0.
void resized_crop(const float* in, const Shape& in_shape, const CropBox& box, std::int64_t out_h,
                  std::int64_t out_w, float* out);
}  // namespace detail

}  // namespace cohort::data
