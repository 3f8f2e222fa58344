// ColorJitter (transforms.hpp) with torchvision.transforms.v2's semantics: a random order of the
// four adjustments (a permutation per sample) and one factor per adjustment drawn uniformly from
// its range, those given as 0 left out.
#include <algorithm>
#include <cstring>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/data/functional.hpp"
#include "cohort/data/transforms.hpp"

namespace cohort::data {
namespace {

class ColorJitter final : public Transform {
 public:
  ColorJitter(float b, float c, float s, float h) {
    // torchvision's _check_input: a number v gives [max(0, 1 - v), 1 + v] (hue: [-v, v]), and a
    // range that is the identity (v = 0) is no adjustment at all.
    const auto factor_range = [](const char* what, float v, detail::JitterRange& r) {
      COHORT_CHECK(v >= 0.0f, "color_jitter: ", what, " ", v, " must be >= 0");
      r = {std::max(0.0, 1.0 - static_cast<double>(v)), 1.0 + static_cast<double>(v), v > 0.0f};
    };
    factor_range("brightness", b, ranges_.brightness);
    factor_range("contrast", c, ranges_.contrast);
    factor_range("saturation", s, ranges_.saturation);
    COHORT_CHECK(h >= 0.0f && h <= 0.5f, "color_jitter: hue ", h, " must be in [0, 0.5]");
    ranges_.hue = {-static_cast<double>(h), static_cast<double>(h), h > 0.0f};
  }
  Shape output_shape(const Shape& in) const override {
    COHORT_CHECK(in.rank() == 3 && (in[0] == 1 || in[0] == 3),
                 "color_jitter: takes [C, H, W] images with 1 or 3 channels, got ", in.str());
    return in;
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t key) const override {
    std::memcpy(out, in, sizeof(float) * static_cast<std::size_t>(s.numel()));
    detail::color_jitter_apply(out, s, detail::color_jitter_draw(ranges_, key), out);
  }

 private:
  detail::JitterRanges ranges_;
};

}  // namespace

namespace detail {

JitterDraw color_jitter_draw(const JitterRanges& r, std::uint64_t key) {
  float u[8];
  for (std::uint64_t b = 0; b < 2; ++b) {
    const rng::U32x4 x = rng::philox_block(key, 0x4a4954ull * 16 + b);  // "JIT"
    for (int k = 0; k < 4; ++k) u[b * 4 + k] = rng::u32_to_unit(x.v[k]);
  }
  JitterDraw d;
  // torch.randperm(4) as a Fisher-Yates shuffle of 0..3 from u[0..2].
  for (int i = 0; i < 4; ++i) d.order[i] = i;
  for (int i = 3; i > 0; --i) {
    const int j = std::min(static_cast<int>(u[3 - i] * static_cast<float>(i + 1)), i);
    std::swap(d.order[i], d.order[j]);
  }
  const JitterRange* rs[4] = {&r.brightness, &r.contrast, &r.saturation, &r.hue};
  for (int k = 0; k < 4; ++k) {
    d.present[k] = rs[k]->present;
    // float(torch.empty(1).uniform_(lo, hi)): a float32 value
    d.factor[k] = static_cast<float>(rs[k]->lo + (rs[k]->hi - rs[k]->lo) * u[4 + k]);
  }
  return d;
}

void color_jitter_apply(const float* in, const Shape& s, const JitterDraw& d, float* out) {
  namespace F = functional;
  if (out != in) std::memmove(out, in, sizeof(float) * static_cast<std::size_t>(s.numel()));
  for (int fn : d.order) {
    if (!d.present[fn]) continue;
    const double f = d.factor[fn];
    switch (fn) {
      case 0: F::adjust_brightness(out, s, f, out); break;
      case 1: F::adjust_contrast(out, s, f, out); break;
      case 2: F::adjust_saturation(out, s, f, out); break;
      default: F::adjust_hue(out, s, f, out); break;
    }
  }
}

}  // namespace detail

TransformPtr color_jitter(float brightness, float contrast, float saturation, float hue) {
  return std::make_shared<ColorJitter>(brightness, contrast, saturation, hue);
}

}  // namespace cohort::data
