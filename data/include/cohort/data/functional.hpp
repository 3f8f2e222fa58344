// The image operations of torchvision.transforms.v2.functional, on float32 [C, H, W] images with
// values in [0, 1] (the tensor path's rules for float images, checked against torchvision in
// tests/data/test_augment.cpp): what ColorJitter and the automatic augmentations
// (TrivialAugmentWide, RandAugment, AutoAugment) are made of, and usable on their own.
//
// Every function reads `in` (shape `s`) and writes `out` of the same shape; out may be in. Factors
// are doubles because torchvision's are Python floats (a blend's weights are factor and 1 - factor
// computed in double, each then rounded to float32). The
// colour operations take 1 or 3 channels (saturation and hue leave a 1-channel image as it is,
// as PIL does), else an error naming the operation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/core/shape.hpp"

namespace cohort::data {

// Resampling of the resizing and geometric transforms (torchvision's InterpolationMode).
// Resizing shrinks with antialiasing for bilinear and bicubic (torchvision's antialias=True: the
// filter widened by the scale factor; bicubic with Keys' a = -0.5, as PIL); nearest takes the
// pixel at floor(i x in / out). The geometric operations (affine, rotate) sample with
// grid_sample's nearest or bilinear rule; bicubic is refused there, as torchvision's tensor path
// does.
enum class Interpolation { nearest, bilinear, bicubic };
// "nearest", "bilinear", "bicubic" (the reference script's --interpolation); anything else is an
// error naming it and the three.
Interpolation parse_interpolation(const std::string& name);
const char* interpolation_name(Interpolation mode);

namespace functional {

// clamp(x * factor, 0, 1); factor >= 0.
void adjust_brightness(const float* in, const Shape& s, double factor, float* out);
// Blends with the image's mean grey level (0.2989 R + 0.587 G + 0.114 B over every pixel):
// clamp(factor x + (1 - factor) mean, 0, 1); factor >= 0.
void adjust_contrast(const float* in, const Shape& s, double factor, float* out);
// Blends each pixel with its own grey level; factor >= 0. One channel: unchanged.
void adjust_saturation(const float* in, const Shape& s, double factor, float* out);
// Blends with the image smoothed by [[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13, the border rows and
// columns kept; images of 2 rows or columns or fewer are returned as they are; factor >= 0.
void adjust_sharpness(const float* in, const Shape& s, double factor, float* out);
// Rotates the hue by `factor` turns (HSV), factor in [-0.5, 0.5]. One channel: unchanged.
void adjust_hue(const float* in, const Shape& s, double factor, float* out);
// floor(x 2^bits) / 2^bits, clamped to the top level; bits in [0, 8].
void posterize(const float* in, const Shape& s, int bits, float* out);
// 1 - x where x >= threshold; threshold <= 1.
void solarize(const float* in, const Shape& s, float threshold, float* out);
// Stretches each channel to [0, 1] (a constant channel is left as it is).
void autocontrast(const float* in, const Shape& s, float* out);
// Histogram equalisation per channel on the 8-bit levels (x quantised as torchvision does,
// trunc(x (256 - 1e-3)), and the result read back as level / 255); a channel whose histogram is
// one level plus fewer than 255 other pixels keeps its quantised levels.
void equalize(const float* in, const Shape& s, float* out);
void invert(const float* in, const Shape& s, float* out);  // 1 - x

// torchvision's affine(): rotation by `angle` degrees (counter-clockwise), translation in pixels,
// scale, and shear in degrees (x, y), about the image centre or `center` (pixel coordinates);
// sampled with `mode` (nearest or bilinear); the area from outside the image is `fill` (empty:
// 0, without the mask torchvision uses for an explicit fill; one value; or one per channel).
struct Affine {
  double angle = 0.0;
  double translate[2] = {0.0, 0.0};
  double scale = 1.0;
  double shear[2] = {0.0, 0.0};
  bool has_center = false;
  double center[2] = {0.0, 0.0};  // x, y
};
void affine(const float* in, const Shape& s, const Affine& params, Interpolation mode,
            const std::vector<float>& fill, float* out);
// torchvision's rotate(expand=False, center=None): multiples of 180 degrees (and of 90 on a
// square image) are exact pixel moves, as there; other angles go through affine().
void rotate(const float* in, const Shape& s, double angle, Interpolation mode,
            const std::vector<float>& fill, float* out);

}  // namespace functional
}  // namespace cohort::data
