// The resampling transforms (transforms.hpp): resize, center_crop and random_resized_crop, on
// torchvision's tensor path's rules (nearest, or bilinear and bicubic with antialias=True; its
// size arithmetic and Python's rounding). One separable kernel serves all three: a box of the input (parts outside read as 0)
// resampled to the output size, width first, then height.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/data/transforms.hpp"

namespace cohort::data {
namespace detail {
namespace {

// Python's round() on a double: half to even.
std::int64_t py_round(double x) { return static_cast<std::int64_t>(std::nearbyint(x)); }

// For each output position along one axis, the first input index and the normalised weights of
// the antialiased filter (torch's _compute_indices_min_size_weights_aa / PIL's
// precompute_coeffs): scale = in / out; support = radius x max(scale, 1) (radius 1 for the
// triangle, 2 for the cubic); centre = scale (i + 0.5); taps from int(centre - support + 0.5) to
// int(centre + support + 0.5), clipped to the input; weight of tap j =
// filter((j - centre + 0.5) / max(scale, 1)), divided by their sum. Nearest has one tap,
// ATen's nearest_idx: floor(i x float(in / out)), i itself when in == out, i / 2 when out = 2 in.
struct AxisWeights {
  std::vector<std::int64_t> first, count;
  std::vector<float> w;  // count_max per output position
  std::int64_t taps = 0;  // count_max
};

double triangle(double x) { return std::max(0.0, 1.0 - std::abs(x)); }
// Keys' cubic convolution with a = -0.5 (ATen's HelperInterpCubic::aa_filter, PIL's bicubic).
double cubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

AxisWeights axis_weights(std::int64_t in, std::int64_t out, Interpolation mode) {
  AxisWeights a;
  a.first.resize(static_cast<std::size_t>(out));
  a.count.resize(static_cast<std::size_t>(out));
  if (mode == Interpolation::nearest) {
    a.taps = 1;
    a.w.assign(static_cast<std::size_t>(out), 1.0f);
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    for (std::int64_t i = 0; i < out; ++i) {
      std::int64_t src = i;
      if (out == 2 * in) {
        src = i >> 1;
      } else if (out != in) {
        src = std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1);
      }
      a.first[static_cast<std::size_t>(i)] = src;
      a.count[static_cast<std::size_t>(i)] = 1;
    }
    return a;
  }
  const double radius = mode == Interpolation::bicubic ? 2.0 : 1.0;
  double (*filter)(double) = mode == Interpolation::bicubic ? cubic : triangle;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = radius * (scale >= 1.0 ? scale : 1.0);
  const double inv = scale >= 1.0 ? 1.0 / scale : 1.0;
  a.taps = static_cast<std::int64_t>(std::ceil(support)) * 2 + 1;
  a.w.assign(static_cast<std::size_t>(out * a.taps), 0.0f);
  std::vector<double> wd(static_cast<std::size_t>(a.taps));
  for (std::int64_t i = 0; i < out; ++i) {
    const double centre = scale * (static_cast<double>(i) + 0.5);
    const std::int64_t lo =
        std::max<std::int64_t>(static_cast<std::int64_t>(centre - support + 0.5), 0);
    const std::int64_t hi =
        std::min<std::int64_t>(static_cast<std::int64_t>(centre + support + 0.5), in);
    const std::int64_t n = std::min(hi - lo, a.taps);
    double total = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      wd[static_cast<std::size_t>(j)] = filter((static_cast<double>(j + lo) - centre + 0.5) * inv);
      total += wd[static_cast<std::size_t>(j)];
    }
    a.first[static_cast<std::size_t>(i)] = lo;
    a.count[static_cast<std::size_t>(i)] = n;
    for (std::int64_t j = 0; j < n; ++j)
      a.w[static_cast<std::size_t>(i * a.taps + j)] =
          total != 0 ? static_cast<float>(wd[static_cast<std::size_t>(j)] / total) : 0.0f;
  }
  return a;
}

}  // namespace

void resized_crop(const float* in, const Shape& s, const CropBox& box, std::int64_t out_h,
                  std::int64_t out_w, float* out, Interpolation mode) {
  const std::int64_t C = s[0], H = s[1], W = s[2];
  COHORT_CHECK(box.height >= 1 && box.width >= 1 && out_h >= 1 && out_w >= 1,
               "resized_crop: empty box ", box.height, "x", box.width, " or output ", out_h, "x",
               out_w);
  // The box as a zero-padded copy where it leaves the image (center_crop's padding); else read
  // in place.
  std::vector<float> padded;
  const float* src = in;
  std::int64_t sh = H, sw = W, top = box.top, left = box.left;
  if (box.top < 0 || box.left < 0 || box.top + box.height > H || box.left + box.width > W) {
    padded.assign(static_cast<std::size_t>(C * box.height * box.width), 0.0f);
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = 0; y < box.height; ++y) {
        const std::int64_t sy = box.top + y;
        if (sy < 0 || sy >= H) continue;
        for (std::int64_t x = 0; x < box.width; ++x) {
          const std::int64_t sx = box.left + x;
          if (sx >= 0 && sx < W)
            padded[static_cast<std::size_t>((c * box.height + y) * box.width + x)] =
                in[(c * H + sy) * W + sx];
        }
      }
    src = padded.data();
    sh = box.height;
    sw = box.width;
    top = left = 0;
  }
  if (out_h == box.height && out_w == box.width) {  // a plain crop: torchvision copies too
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = 0; y < out_h; ++y)
        std::copy(src + (c * sh + top + y) * sw + left, src + (c * sh + top + y) * sw + left + out_w,
                  out + (c * out_h + y) * out_w);
    return;
  }
  const AxisWeights wx = axis_weights(box.width, out_w, mode);
  const AxisWeights wy = axis_weights(box.height, out_h, mode);
  std::vector<float> tmp(static_cast<std::size_t>(box.height * out_w));
  for (std::int64_t c = 0; c < C; ++c) {
    for (std::int64_t y = 0; y < box.height; ++y) {
      const float* row = src + (c * sh + top + y) * sw + left;
      float* t = tmp.data() + y * out_w;
      for (std::int64_t x = 0; x < out_w; ++x) {
        const float* w = wx.w.data() + x * wx.taps;
        const float* p = row + wx.first[static_cast<std::size_t>(x)];
        float acc = 0;
        for (std::int64_t k = 0; k < wx.count[static_cast<std::size_t>(x)]; ++k) acc += w[k] * p[k];
        t[x] = acc;
      }
    }
    float* o = out + c * out_h * out_w;
    for (std::int64_t y = 0; y < out_h; ++y) {
      const float* w = wy.w.data() + y * wy.taps;
      const std::int64_t y0 = wy.first[static_cast<std::size_t>(y)];
      float* orow = o + y * out_w;
      std::fill(orow, orow + out_w, 0.0f);
      for (std::int64_t k = 0; k < wy.count[static_cast<std::size_t>(y)]; ++k) {
        const float wk = w[k];
        const float* t = tmp.data() + (y0 + k) * out_w;
        for (std::int64_t x = 0; x < out_w; ++x) orow[x] += wk * t[x];
      }
    }
  }
}

CropBox random_resized_crop_box(std::int64_t height, std::int64_t width, float scale_min,
                                float scale_max, float ratio_min, float ratio_max,
                                const float* u) {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  // torch.log(torch.tensor(ratio)): float32 logarithms.
  const float log_lo = std::log(ratio_min), log_hi = std::log(ratio_max);
  for (int t = 0; t < 10; ++t) {
    const double target = area * (scale_min + (scale_max - scale_min) * u[2 * t]);
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * u[2 * t + 1]);
    const std::int64_t w = py_round(std::sqrt(target * aspect));
    const std::int64_t h = py_round(std::sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto pick = [](float v, std::int64_t n) {  // torch.randint(0, n)
        return std::min<std::int64_t>(static_cast<std::int64_t>(v * static_cast<double>(n)), n - 1);
      };
      return {pick(u[20], height - h + 1), pick(u[21], width - w + 1), h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  std::int64_t w = width, h = height;
  if (in_ratio < std::min(ratio_min, ratio_max)) {
    h = py_round(static_cast<double>(w) / std::min(ratio_min, ratio_max));
  } else if (in_ratio > std::max(ratio_min, ratio_max)) {
    w = py_round(static_cast<double>(h) * std::max(ratio_min, ratio_max));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

}  // namespace detail

namespace {

void require_image(const char* who, const Shape& s) {
  COHORT_CHECK(s.rank() == 3 && s[1] >= 1 && s[2] >= 1, who,
               ": expected a [C, H, W] image of at least 1x1, got ", s.str());
}

class Resize final : public Transform {
 public:
  // height 0: `size` is the shorter side's.
  Resize(std::int64_t size, std::int64_t height, std::int64_t width, Interpolation mode)
      : size_(size), h_(height), w_(width), mode_(mode) {
    COHORT_CHECK(size > 0 || (height > 0 && width > 0), "resize: size ", size, " must be >= 1");
  }
  Shape output_shape(const Shape& in) const override {
    require_image("resize", in);
    if (h_ > 0) return Shape{in[0], h_, w_};
    // torchvision's _compute_resized_output_size for one int.
    const std::int64_t h = in[1], w = in[2];
    const std::int64_t shorter = std::min(h, w), longer = std::max(h, w);
    const std::int64_t new_long = static_cast<std::int64_t>(
        static_cast<double>(size_) * static_cast<double>(longer) / static_cast<double>(shorter));
    return w <= h ? Shape{in[0], new_long, size_} : Shape{in[0], size_, new_long};
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t) const override {
    const Shape o = output_shape(s);
    detail::resized_crop(in, s, {0, 0, s[1], s[2]}, o[1], o[2], out, mode_);
  }
  bool fixes_size() const override { return h_ > 0; }

 private:
  std::int64_t size_, h_, w_;
  Interpolation mode_;
};

class CenterCrop final : public Transform {
 public:
  CenterCrop(std::int64_t h, std::int64_t w) : h_(h), w_(w) {
    COHORT_CHECK(h >= 1 && w >= 1, "center_crop: size ", h, "x", w, " must be >= 1x1");
  }
  Shape output_shape(const Shape& in) const override {
    require_image("center_crop", in);
    return Shape{in[0], h_, w_};
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t) const override {
    // torchvision pads a smaller image by (h - H) // 2 on top (left) first, then crops centrally.
    const std::int64_t H = s[1], W = s[2];
    const std::int64_t pad_top = h_ > H ? (h_ - H) / 2 : 0, pad_left = w_ > W ? (w_ - W) / 2 : 0;
    const std::int64_t PH = std::max(H, h_), PW = std::max(W, w_);
    const std::int64_t top = detail::py_round((PH - h_) / 2.0) - pad_top;
    const std::int64_t left = detail::py_round((PW - w_) / 2.0) - pad_left;
    detail::resized_crop(in, s, {top, left, h_, w_}, h_, w_, out);
  }
  bool fixes_size() const override { return true; }

 private:
  std::int64_t h_, w_;
};

class RandomResizedCrop final : public Transform {
 public:
  RandomResizedCrop(std::int64_t size, float smin, float smax, float rmin, float rmax,
                    Interpolation mode)
      : size_(size), smin_(smin), smax_(smax), rmin_(rmin), rmax_(rmax), mode_(mode) {
    COHORT_CHECK(size >= 1, "random_resized_crop: size ", size, " must be >= 1");
    detail::check_scale_ratio("random_resized_crop", smin, smax, rmin, rmax);
  }
  Shape output_shape(const Shape& in) const override {
    require_image("random_resized_crop", in);
    return Shape{in[0], size_, size_};
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t key) const override {
    float u[24];
    for (std::uint64_t b = 0; b < 6; ++b) {
      const rng::U32x4 r = rng::philox_block(key, 0x5252430000ull + b);  // "RRC"
      for (int k = 0; k < 4; ++k) u[b * 4 + k] = rng::u32_to_unit(r.v[k]);
    }
    const detail::CropBox box =
        detail::random_resized_crop_box(s[1], s[2], smin_, smax_, rmin_, rmax_, u);
    detail::resized_crop(in, s, box, size_, size_, out, mode_);
  }
  bool fixes_size() const override { return true; }

 private:
  std::int64_t size_;
  float smin_, smax_, rmin_, rmax_;
  Interpolation mode_;
};

}  // namespace

TransformPtr resize(std::int64_t size, Interpolation mode) {
  return std::make_shared<Resize>(size, 0, 0, mode);
}
TransformPtr resize(std::int64_t height, std::int64_t width, Interpolation mode) {
  COHORT_CHECK(height >= 1 && width >= 1, "resize: size ", height, "x", width, " must be >= 1x1");
  return std::make_shared<Resize>(0, height, width, mode);
}
TransformPtr center_crop(std::int64_t height, std::int64_t width) {
  return std::make_shared<CenterCrop>(height, width);
}
TransformPtr random_resized_crop(std::int64_t size, float scale_min, float scale_max,
                                 float ratio_min, float ratio_max, Interpolation mode) {
  return std::make_shared<RandomResizedCrop>(size, scale_min, scale_max, ratio_min, ratio_max,
                                             mode);
}

}  // namespace cohort::data
