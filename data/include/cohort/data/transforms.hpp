// Per-sample transforms applied on the host by the DataLoader, in order. Random transforms draw
// from Philox keyed by (loader seed, epoch, sample index), so a run is reproducible and does not
// depend on batch size, prefetching or how samples are split across ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/shape.hpp"
#include "cohort/data/functional.hpp"

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

// ---- resampling (torchvision.transforms.v2 on tensors, antialias=True) ----
// Resampling as torchvision's tensor path does it, `mode` (Interpolation, functional.hpp)
// bilinear by default: when shrinking, the triangle (bicubic: Keys' cubic) filter is widened by
// the scale factor, PIL's and torch's _upsample_bilinear2d_aa rule; when enlarging, plain
// bilinear with align_corners=False (bicubic: PIL's); nearest takes floor(i x in / out).
//
// Resize(size): the shorter side to `size`, the longer scaled by int(size * long / short), as
// torchvision computes it (the output's size depends on the input's).
TransformPtr resize(std::int64_t size, Interpolation mode = Interpolation::bilinear);
// Resize([height, width]): to exactly that size.
TransformPtr resize(std::int64_t height, std::int64_t width,
                    Interpolation mode = Interpolation::bilinear);
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
                                 float ratio_max = 4.0f / 3.0f,
                                 Interpolation mode = Interpolation::bilinear);

// RandomErasing(p, scale, ratio, value) of torchvision, as the reference script applies it after
// Normalize: with probability p a box of a random area fraction in [scale_min, scale_max] and
// aspect ratio (height / width) in [ratio_min, ratio_max] (log-uniform; 10 tries, none fitting
// leaves the image as it was) is set to `value`: one number, one per channel, or, empty,
// standard-normal draws (value="random").
TransformPtr random_erasing(float p = 0.5f, float scale_min = 0.02f, float scale_max = 0.33f,
                            float ratio_min = 0.3f, float ratio_max = 3.3f,
                            std::vector<float> value = {0.0f});

// ---- colour and automatic augmentation (torchvision.transforms.v2) ----
// They work on images with values in [0, 1] (before normalize, as in torchvision's recipes) with
// 1 or 3 channels; their operations are functional.hpp's.
//
// ColorJitter(brightness, contrast, saturation, hue): per sample, the four adjustments in a
// random order, each factor uniform in [max(0, 1 - v), 1 + v] (hue: [-v, v], v <= 0.5); a 0
// leaves that adjustment out.
TransformPtr color_jitter(float brightness, float contrast = 0.0f, float saturation = 0.0f,
                          float hue = 0.0f);

// TrivialAugmentWide(num_magnitude_bins): one of 14 operations (Identity, ShearX/Y, TranslateX/Y,
// Rotate, Brightness, Color, Contrast, Sharpness, Posterize, Solarize, AutoContrast, Equalize)
// with a uniformly drawn magnitude bin and, for the signed ones, sign.
// RandAugment(num_ops, magnitude, num_magnitude_bins): num_ops operations of the same 14 at the
// fixed magnitude bin, each with a random sign.
// AutoAugment(policy): one of the policy's 25 pairs of (operation, probability, magnitude bin),
// each operation applied with its probability (10 bins); the ImageNet, CIFAR-10 and SVHN
// policies of the AutoAugment paper as torchvision has them.
// Geometric operations sample with `mode` (nearest, torchvision's default, or bilinear, what the
// reference script passes from --interpolation) and fill the area from outside with `fill`
// (empty: zeros). Magnitudes that depend on the image size use each image's own.
enum class AutoAugmentPolicy { imagenet, cifar10, svhn };
TransformPtr trivial_augment_wide(int num_magnitude_bins = 31,
                                  Interpolation mode = Interpolation::nearest,
                                  std::vector<float> fill = {});
TransformPtr rand_augment(int num_ops = 2, int magnitude = 9, int num_magnitude_bins = 31,
                          Interpolation mode = Interpolation::nearest,
                          std::vector<float> fill = {});
TransformPtr auto_augment(AutoAugmentPolicy policy = AutoAugmentPolicy::imagenet,
                          Interpolation mode = Interpolation::nearest,
                          std::vector<float> fill = {});
// The reference script's --auto-augment NAME: ta_wide, ra (RandAugment at `ra_magnitude`, its
// --ra-magnitude), imagenet, cifar10, svhn; anything else (augmix included) is an error naming
// it and the choices.
TransformPtr auto_augment_by_name(const std::string& name,
                                  Interpolation mode = Interpolation::bilinear,
                                  int ra_magnitude = 9);

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
// ---- the augmentations' parts, exposed for tests ----
enum class AugmentOp {
  identity, shear_x, shear_y, translate_x, translate_y, rotate, brightness, color, contrast,
  sharpness, posterize, solarize, autocontrast, equalize, invert
};
enum class AugmentSpace { trivial_augment_wide, rand_augment, auto_augment };
const char* augment_op_name(AugmentOp op);  // torchvision's: "ShearX", "AutoContrast", ...
// The space's operations in torchvision's _AUGMENTATION_SPACE order (the order randint picks in).
std::vector<AugmentOp> augment_ops(AugmentSpace space);
bool augment_signed(AugmentSpace space, AugmentOp op);
// The magnitude bins of `op` for an image of height x width (float32 torch.linspace values as
// doubles; Posterize's bits); empty for an operation without magnitude.
std::vector<double> augment_magnitudes(AugmentSpace space, AugmentOp op, int bins,
                                       std::int64_t height, std::int64_t width);
// _apply_image_or_video_transform(image, op, magnitude): out may be in.
void apply_augment_op(const float* in, const Shape& s, AugmentOp op, double magnitude,
                      Interpolation mode, const std::vector<float>& fill, float* out);
struct AugmentStep {
  AugmentOp op;
  double magnitude;  // signed; 0 for operations without magnitude
};
// What an automatic augmentation transform does to the sample of `key` with that image size, in
// order (its apply() runs exactly these steps).
class AugmentPlanner {
 public:
  virtual ~AugmentPlanner() = default;
  virtual std::vector<AugmentStep> plan(std::uint64_t key, std::int64_t height,
                                        std::int64_t width) const = 0;
};
std::vector<AugmentStep> augment_plan(const Transform& t, std::uint64_t key, std::int64_t height,
                                      std::int64_t width);
struct AugmentSubPolicy {
  AugmentOp op;
  float p;
  int bin;  // -1: no magnitude
};
std::vector<std::pair<AugmentSubPolicy, AugmentSubPolicy>> auto_augment_policy(
    AutoAugmentPolicy policy);

// ColorJitter's ranges and one sample's draw: order = a permutation of 0..3 (brightness,
// contrast, saturation, hue), the adjustments applied in that order, absent ones skipped.
struct JitterRange {
  double lo = 1.0, hi = 1.0;
  bool present = false;
};
struct JitterRanges {
  JitterRange brightness, contrast, saturation, hue;
};
struct JitterDraw {
  int order[4];
  bool present[4];
  float factor[4];
};
JitterDraw color_jitter_draw(const JitterRanges& ranges, std::uint64_t key);
void color_jitter_apply(const float* in, const Shape& s, const JitterDraw& draw, float* out);

// Resamples the box of `in` ([C, H, W]) to [C, out_h, out_w] into `out` (bilinear, antialias
// as above); parts of the box outside the image read as 0.
void resized_crop(const float* in, const Shape& in_shape, const CropBox& box, std::int64_t out_h,
                  std::int64_t out_w, float* out, Interpolation mode = Interpolation::bilinear);
}  // namespace detail

}  // namespace cohort::data
