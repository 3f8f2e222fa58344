// The sample transforms (transforms.hpp): normalize, random crop, random flip, pad and
// repeat_channels, each checking its input shape; the random ones draw from the key the loader
// passes, so a sample's augmentation depends only on (seed, epoch, sample).
#include "cohort/data/transforms.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"

namespace cohort::data {
namespace {

void require_chw(const char* who, const Shape& s) {
  COHORT_CHECK(s.rank() == 3, who, ": expected a [C, H, W] sample, got ", s.str());
}

class Normalize final : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> stddev)
      : mean_(std::move(mean)), std_(std::move(stddev)) {
    COHORT_CHECK(!mean_.empty() && mean_.size() == std_.size(), "normalize: ", mean_.size(),
                 " means and ", std_.size(), " standard deviations (need the same, >= 1)");
    for (float s : std_) COHORT_CHECK(s > 0.0f, "normalize: standard deviation ", s, " must be > 0");
  }
  Shape output_shape(const Shape& in) const override {
    require_chw("normalize", in);
    COHORT_CHECK(mean_.size() == 1 || static_cast<std::int64_t>(mean_.size()) == in[0],
                 "normalize: ", mean_.size(), " channel statistics for a sample with ", in[0],
                 " channels");
    return in;
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t) const override {
    const std::int64_t plane = s[1] * s[2];
    for (std::int64_t c = 0; c < s[0]; ++c) {
      const std::size_t k = mean_.size() == 1 ? 0 : static_cast<std::size_t>(c);
      const float m = mean_[k], inv = 1.0f / std_[k];
      for (std::int64_t i = 0; i < plane; ++i) out[c * plane + i] = (in[c * plane + i] - m) * inv;
    }
  }

 private:
  std::vector<float> mean_, std_;
};

class RandomCrop final : public Transform {
 public:
  RandomCrop(std::int64_t size, std::int64_t padding) : size_(size), pad_(padding) {
    COHORT_CHECK(size >= 1 && padding >= 0, "random_crop: size ", size, " must be >= 1 and padding ",
                 padding, " >= 0");
  }
  Shape output_shape(const Shape& in) const override {
    require_chw("random_crop", in);
    COHORT_CHECK(in[1] + 2 * pad_ >= size_ && in[2] + 2 * pad_ >= size_, "random_crop: crop ",
                 size_, "x", size_, " is larger than the padded sample ", in[1] + 2 * pad_, "x",
                 in[2] + 2 * pad_);
    return Shape{in[0], size_, size_};
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t key) const override {
    const std::int64_t H = s[1], W = s[2];
    const rng::U32x4 r = rng::philox_block(key, 0x43524f50ull);  // "CROP"
    const std::int64_t top = static_cast<std::int64_t>(r.v[0] % static_cast<std::uint32_t>(H + 2 * pad_ - size_ + 1));
    const std::int64_t left = static_cast<std::int64_t>(r.v[1] % static_cast<std::uint32_t>(W + 2 * pad_ - size_ + 1));
    for (std::int64_t c = 0; c < s[0]; ++c)
      for (std::int64_t y = 0; y < size_; ++y) {
        const std::int64_t sy = top + y - pad_;
        for (std::int64_t x = 0; x < size_; ++x) {
          const std::int64_t sx = left + x - pad_;
          out[(c * size_ + y) * size_ + x] =
              (sy >= 0 && sy < H && sx >= 0 && sx < W) ? in[(c * H + sy) * W + sx] : 0.0f;
        }
      }
  }

 private:
  std::int64_t size_, pad_;
};

class RandomHorizontalFlip final : public Transform {
 public:
  explicit RandomHorizontalFlip(float p) : p_(p) {
    COHORT_CHECK(p >= 0.0f && p <= 1.0f, "random_horizontal_flip: p ", p, " outside [0, 1]");
  }
  Shape output_shape(const Shape& in) const override {
    require_chw("random_horizontal_flip", in);
    return in;
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t key) const override {
    const rng::U32x4 r = rng::philox_block(key, 0x464c4950ull);  // "FLIP"
    const bool flip = rng::u32_to_unit(r.v[0]) < p_;
    const std::int64_t W = s[2], rows = s[0] * s[1];
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t x = 0; x < W; ++x)
        out[row * W + x] = in[row * W + (flip ? W - 1 - x : x)];
  }

 private:
  float p_;
};

class Pad final : public Transform {
 public:
  explicit Pad(std::int64_t padding) : pad_(padding) {
    COHORT_CHECK(padding >= 0, "pad: padding ", padding, " must be >= 0");
  }
  Shape output_shape(const Shape& in) const override {
    require_chw("pad", in);
    return Shape{in[0], in[1] + 2 * pad_, in[2] + 2 * pad_};
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t) const override {
    const std::int64_t H = s[1], W = s[2], Ho = H + 2 * pad_, Wo = W + 2 * pad_;
    std::memset(out, 0, sizeof(float) * static_cast<std::size_t>(s[0] * Ho * Wo));
    for (std::int64_t c = 0; c < s[0]; ++c)
      for (std::int64_t y = 0; y < H; ++y)
        std::memcpy(out + (c * Ho + y + pad_) * Wo + pad_, in + (c * H + y) * W,
                    sizeof(float) * static_cast<std::size_t>(W));
  }

 private:
  std::int64_t pad_;
};

class RepeatChannels final : public Transform {
 public:
  explicit RepeatChannels(std::int64_t channels) : channels_(channels) {
    COHORT_CHECK(channels >= 1, "repeat_channels: channels ", channels, " must be >= 1");
  }
  Shape output_shape(const Shape& in) const override {
    require_chw("repeat_channels", in);
    COHORT_CHECK(in[0] == 1, "repeat_channels: expected a one-channel sample, got ", in.str());
    return Shape{channels_, in[1], in[2]};
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t) const override {
    const std::size_t plane = static_cast<std::size_t>(s[1] * s[2]);
    for (std::int64_t c = 0; c < channels_; ++c) std::memcpy(out + c * plane, in, sizeof(float) * plane);
  }

 private:
  std::int64_t channels_;
};

class RandomErasing final : public Transform {
 public:
  RandomErasing(float p, float smin, float smax, float rmin, float rmax, std::vector<float> value)
      : p_(p), smin_(smin), smax_(smax), rmin_(rmin), rmax_(rmax), value_(std::move(value)) {
    COHORT_CHECK(p >= 0.0f && p <= 1.0f, "random_erasing: p ", p, " outside [0, 1]");
    detail::check_scale_ratio("random_erasing", smin, smax, rmin, rmax);
  }
  Shape output_shape(const Shape& in) const override {
    require_chw("random_erasing", in);
    COHORT_CHECK(value_.size() <= 1 || static_cast<std::int64_t>(value_.size()) == in[0],
                 "random_erasing: ", value_.size(), " values for a sample with ", in[0],
                 " channels (give one, or one per channel)");
    return in;
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t key) const override {
    const std::int64_t C = s[0], H = s[1], W = s[2];
    std::memcpy(out, in, sizeof(float) * static_cast<std::size_t>(s.numel()));
    float u[23];
    for (std::uint64_t b = 0; b < 6; ++b) {
      const rng::U32x4 r = rng::philox_block(key, 0x4552415345ull + b);  // "ERASE"
      for (int k = 0; k < 4 && b * 4 + k < 23; ++k) u[b * 4 + k] = rng::u32_to_unit(r.v[k]);
    }
    if (!(u[22] < p_)) return;  // torch.rand(1) < p
    const detail::CropBox box =
        detail::random_erasing_box(H, W, smin_, smax_, rmin_, rmax_, u);
    if (box.height == H && box.width == W) return;  // no try fitted: the image as it was
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = box.top; y < box.top + box.height; ++y)
        for (std::int64_t x = box.left; x < box.left + box.width; ++x) {
          float v;
          if (value_.empty()) {  // value="random": standard normal draws, keyed by position
            const std::uint64_t n = static_cast<std::uint64_t>((c * H + y) * W + x);
            const rng::U32x4 r = rng::philox_block(key ^ 0x52414e444f4dull, n);  // "RANDOM"
            const double u1 = (static_cast<double>(r.v[0]) + 0.5) / 4294967296.0;
            const double u2 = (static_cast<double>(r.v[1]) + 0.5) / 4294967296.0;
            v = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                   std::cos(6.283185307179586 * u2));
          } else {
            v = value_[value_.size() == 1 ? 0 : static_cast<std::size_t>(c)];
          }
          out[(c * H + y) * W + x] = v;
        }
  }

 private:
  float p_, smin_, smax_, rmin_, rmax_;
  std::vector<float> value_;
};

}  // namespace

namespace detail {
void check_scale_ratio(const char* who, float smin, float smax, float rmin, float rmax) {
  COHORT_CHECK(smin > 0 && smin <= smax && smax <= 1, who, ": scale (", smin, ", ", smax,
               ") must satisfy 0 < min <= max <= 1");
  COHORT_CHECK(rmin > 0 && rmin <= rmax, who, ": ratio (", rmin, ", ", rmax,
               ") must satisfy 0 < min <= max");
}

CropBox random_erasing_box(std::int64_t height, std::int64_t width, float scale_min,
                           float scale_max, float ratio_min, float ratio_max, const float* u) {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  // torch.log(torch.tensor(ratio)): float32 logarithms; Python's round(): half to even.
  const float log_lo = std::log(ratio_min), log_hi = std::log(ratio_max);
  const auto py_round = [](double x) { return static_cast<std::int64_t>(std::nearbyint(x)); };
  for (int t = 0; t < 10; ++t) {
    const double erase_area = area * (scale_min + (scale_max - scale_min) * u[2 * t]);
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * u[2 * t + 1]);
    const std::int64_t h = py_round(std::sqrt(erase_area * aspect));
    const std::int64_t w = py_round(std::sqrt(erase_area / aspect));
    if (!(h < height && w < width)) continue;
    const auto pick = [](float v, std::int64_t n) {  // torch.randint(0, n)
      return std::min<std::int64_t>(static_cast<std::int64_t>(v * static_cast<double>(n)), n - 1);
    };
    return {pick(u[20], height - h + 1), pick(u[21], width - w + 1), h, w};
  }
  return {0, 0, height, width};
}
}  // namespace detail

TransformPtr random_erasing(float p, float scale_min, float scale_max, float ratio_min,
                            float ratio_max, std::vector<float> value) {
  return std::make_shared<RandomErasing>(p, scale_min, scale_max, ratio_min, ratio_max,
                                         std::move(value));
}

TransformPtr pad(std::int64_t padding) { return std::make_shared<Pad>(padding); }
TransformPtr repeat_channels(std::int64_t channels) {
  return std::make_shared<RepeatChannels>(channels);
}
TransformPtr normalize(std::vector<float> mean, std::vector<float> stddev) {
  return std::make_shared<Normalize>(std::move(mean), std::move(stddev));
}
TransformPtr random_crop(std::int64_t size, std::int64_t padding) {
  return std::make_shared<RandomCrop>(size, padding);
}
TransformPtr random_horizontal_flip(float p) { return std::make_shared<RandomHorizontalFlip>(p); }

}  // namespace cohort::data
