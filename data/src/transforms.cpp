// The sample transforms (transforms.hpp): normalize, random crop, random flip, pad and
// repeat_channels, each checking its input shape; the random ones draw from the key the loader
// passes, so a sample's augmentation depends only on (seed, epoch, sample).
#include "cohort/data/transforms.hpp"

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

}  // namespace

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
