// The colour operations of functional.hpp, written to round as torchvision's float32 tensors do:
// a Python float factor becomes float32 where a tensor op takes it (mul(factor)), `add_(other,
// alpha)` is a fused multiply-add (ATen's vectorised add), and the grey level is
// 0.2989 r + 0.587 g + 0.114 b in that order. Compiled with -ffp-contract=off so only the fused
// operations written here are fused.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "clones.hpp"
#include "cohort/data/functional.hpp"

namespace cohort::data::functional {
namespace {

void require(const char* who, const Shape& s, bool colour) {
  COHORT_CHECK(s.rank() == 3 && s[1] >= 1 && s[2] >= 1, who,
               ": expected a [C, H, W] image of at least 1x1, got ", s.str());
  COHORT_CHECK(!colour || s[0] == 1 || s[0] == 3, who, ": takes 1 or 3 channels, got ", s[0],
               " (", s.str(), ")");
}
void require_factor(const char* who, double factor) {
  COHORT_CHECK(factor >= 0.0, who, ": factor ", factor, " must be >= 0");
}

float clamp01(float x) { return std::min(std::max(x, 0.0f), 1.0f); }

// _rgb_to_grayscale_image (preserve_dtype=False): one plane of H x W.
COHORT_DATA_CLONES void grey(const float* in, std::int64_t plane, float* g) {
  const float* r = in;
  const float* gr = in + plane;
  const float* b = in + 2 * plane;
  for (std::int64_t i = 0; i < plane; ++i)
    g[i] = std::fma(b[i], 0.114f, std::fma(gr[i], 0.587f, r[i] * 0.2989f));
}

// _blend(image1, image2, ratio): clamp(image1 * ratio + image2 * (1 - ratio), 0, 1); image2 is a
// plane broadcast over the channels (`other_plane`) or one value (`other_value`).
COHORT_DATA_CLONES void blend(const float* in, const Shape& s, double ratio, const float* other_plane,
           float other_value, float* out) {
  const float r = static_cast<float>(ratio), alpha = static_cast<float>(1.0 - ratio);
  const std::int64_t plane = s[1] * s[2];
  for (std::int64_t c = 0; c < s[0]; ++c)
    for (std::int64_t i = 0; i < plane; ++i) {
      const float o = other_plane ? other_plane[i] : other_value;
      out[c * plane + i] = clamp01(std::fma(o, alpha, in[c * plane + i] * r));
    }
}

// Python's float % 1.0 and torch.remainder: the result takes the divisor's sign.
float remainder1(float x) {
  float m = std::fmod(x, 1.0f);
  if (m != 0.0f && m < 0.0f) m += 1.0f;
  return m;
}

}  // namespace

COHORT_DATA_CLONES void adjust_brightness(const float* in, const Shape& s, double factor, float* out) {
  require("adjust_brightness", s, true);
  require_factor("adjust_brightness", factor);
  const float f = static_cast<float>(factor);
  const std::int64_t n = s.numel();
  for (std::int64_t i = 0; i < n; ++i) out[i] = clamp01(in[i] * f);
}

void adjust_contrast(const float* in, const Shape& s, double factor, float* out) {
  require("adjust_contrast", s, true);
  require_factor("adjust_contrast", factor);
  const std::int64_t plane = s[1] * s[2];
  double sum = 0.0;
  if (s[0] == 3) {
    std::vector<float> g(static_cast<std::size_t>(plane));
    grey(in, plane, g.data());
    for (float v : g) sum += v;
  } else {
    for (std::int64_t i = 0; i < plane; ++i) sum += in[i];
  }
  const float mean = static_cast<float>(sum / static_cast<double>(plane));
  blend(in, s, factor, nullptr, mean, out);
}

void adjust_saturation(const float* in, const Shape& s, double factor, float* out) {
  require("adjust_saturation", s, true);
  require_factor("adjust_saturation", factor);
  if (s[0] == 1) {  // PIL leaves a grey image as it is
    if (out != in) std::memmove(out, in, sizeof(float) * static_cast<std::size_t>(s.numel()));
    return;
  }
  const std::int64_t plane = s[1] * s[2];
  std::vector<float> g(static_cast<std::size_t>(plane));
  grey(in, plane, g.data());
  blend(in, s, factor, g.data(), 0.0f, out);
}

COHORT_DATA_CLONES void adjust_sharpness(const float* in, const Shape& s, double factor, float* out) {
  require("adjust_sharpness", s, true);
  require_factor("adjust_sharpness", factor);
  const std::int64_t C = s[0], H = s[1], W = s[2];
  std::vector<float> src(in, in + s.numel());  // out may be in; the blur reads the original
  if (out != in) std::memcpy(out, in, sizeof(float) * src.size());
  if (H <= 2 || W <= 2) return;
  // conv2d with the 3x3 kernel a a a / a b a / a a a (float32 weights), then the interior
  // becomes view + (blurred - view) * (1 - factor), clamped.
  const float a = static_cast<float>(1.0 / 13.0), b = static_cast<float>(5.0 / 13.0);
  const float alpha = static_cast<float>(1.0 - factor);
  for (std::int64_t c = 0; c < C; ++c) {
    const float* p = src.data() + c * H * W;
    float* o = out + c * H * W;
    for (std::int64_t y = 1; y + 1 < H; ++y)
      for (std::int64_t x = 1; x + 1 < W; ++x) {
        float acc = 0.0f;
        for (std::int64_t dy = -1; dy <= 1; ++dy)
          for (std::int64_t dx = -1; dx <= 1; ++dx)
            acc = std::fma(p[(y + dy) * W + x + dx], (dy == 0 && dx == 0) ? b : a, acc);
        const float v = p[y * W + x];
        o[y * W + x] = std::fma(acc - v, alpha, v);
      }
    for (std::int64_t i = 0; i < H * W; ++i) o[i] = clamp01(o[i]);
  }
}

COHORT_DATA_CLONES void adjust_hue(const float* in, const Shape& s, double factor, float* out) {
  require("adjust_hue", s, true);
  COHORT_CHECK(factor >= -0.5 && factor <= 0.5, "adjust_hue: factor ", factor,
               " is not in [-0.5, 0.5]");
  const std::int64_t plane = s[1] * s[2];
  if (s[0] == 1) {
    if (out != in) std::memmove(out, in, sizeof(float) * static_cast<std::size_t>(plane));
    return;
  }
  const float hf = static_cast<float>(factor);
  const float sixth = static_cast<float>(1.0 / 6.0);
  static constexpr int kSelect[3][6] = {{0, 2, 1, 1, 3, 0}, {3, 0, 0, 2, 1, 1}, {1, 1, 3, 0, 0, 2}};
  for (std::int64_t i = 0; i < plane; ++i) {
    const float r = in[i], g = in[plane + i], b = in[2 * plane + i];
    // _rgb_to_hsv
    const float maxc = std::max(std::max(r, g), b), minc = std::min(std::min(r, g), b);
    const bool eqc = maxc == minc;
    const float range = maxc - minc;
    const float sat = range / (eqc ? 1.0f : maxc);
    const float div = eqc ? 1.0f : range;
    const float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
    const bool neq_r = maxc != r, eq_g = maxc == g;
    const float hg = ((rc + 2.0f) - bc) * ((eq_g && neq_r) ? 1.0f : 0.0f);
    const float hr = (bc - gc) * (!neq_r ? 1.0f : 0.0f);
    const float hb = ((gc + 4.0f) - rc) * ((neq_r && !eq_g) ? 1.0f : 0.0f);
    float h = std::fmod((hr + hg + hb) * sixth + 1.0f, 1.0f);
    // h.add_(hue_factor).remainder_(1.0)
    h = remainder1(h + hf);
    // _hsv_to_rgb
    const float h6 = h * 6.0f;
    const float fi = std::floor(h6);
    const float f = h6 - fi;
    int k = static_cast<int>(fi) % 6;
    if (k < 0) k += 6;
    const float sxf = sat * f, one_minus_s = 1.0f - sat;
    const float q = clamp01((1.0f - sxf) * maxc);
    const float t = clamp01((sxf + one_minus_s) * maxc);
    const float p = clamp01(one_minus_s * maxc);
    const float vpqt[4] = {maxc, p, q, t};
    out[i] = vpqt[kSelect[0][k]];
    out[plane + i] = vpqt[kSelect[1][k]];
    out[2 * plane + i] = vpqt[kSelect[2][k]];
  }
}

COHORT_DATA_CLONES void posterize(const float* in, const Shape& s, int bits, float* out) {
  require("posterize", s, false);
  COHORT_CHECK(bits >= 0 && bits <= 8, "posterize: bits ", bits, " outside [0, 8]");
  const float levels = static_cast<float>(1 << bits), inv = 1.0f / levels;
  const std::int64_t n = s.numel();
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = std::min(std::max(std::floor(in[i] * levels), 0.0f), levels - 1.0f) * inv;
}

void solarize(const float* in, const Shape& s, float threshold, float* out) {
  require("solarize", s, false);
  COHORT_CHECK(threshold <= 1.0f, "solarize: threshold ", threshold,
               " is above the largest value, 1");
  const std::int64_t n = s.numel();
  for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] >= threshold ? 1.0f - in[i] : in[i];
}

void invert(const float* in, const Shape& s, float* out) {
  require("invert", s, false);
  const std::int64_t n = s.numel();
  for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0f - in[i];
}

void autocontrast(const float* in, const Shape& s, float* out) {
  require("autocontrast", s, true);
  const std::int64_t plane = s[1] * s[2];
  for (std::int64_t c = 0; c < s[0]; ++c) {
    const float* p = in + c * plane;
    float* o = out + c * plane;
    const auto mm = std::minmax_element(p, p + plane);
    float lo = *mm.first, scale = *mm.second - *mm.first;
    if (*mm.second == *mm.first) lo = 0.0f, scale = 1.0f;
    for (std::int64_t i = 0; i < plane; ++i) o[i] = clamp01((p[i] - lo) / scale);
  }
}

void equalize(const float* in, const Shape& s, float* out) {
  require("equalize", s, false);
  const std::int64_t plane = s[1] * s[2];
  // to_dtype_image(float -> uint8, scale=True): trunc(x * (255 + 1 - 1e-3)) in float32; values
  // outside [0, 1] (a bicubic resize's overshoot) are clamped here rather than wrapped.
  const float up = static_cast<float>(255.0 + 1.0 - 1e-3);
  const float down = static_cast<float>(1.0 / 255.0);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(plane));
  for (std::int64_t c = 0; c < s[0]; ++c) {
    const float* p = in + c * plane;
    float* o = out + c * plane;
    std::array<std::int64_t, 256> hist{};
    for (std::int64_t i = 0; i < plane; ++i) {
      const float v = std::min(std::max(p[i] * up, 0.0f), 255.0f);
      q[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v);
      ++hist[q[static_cast<std::size_t>(i)]];
    }
    // The last level present holds the "max" bin (argmax of the cumulative histogram: the first
    // index where it reaches the total); step = the other pixels // 255.
    std::int64_t last = 255;
    while (hist[static_cast<std::size_t>(last)] == 0) --last;
    const std::int64_t step = (plane - hist[static_cast<std::size_t>(last)]) / 255;
    std::array<std::uint8_t, 256> lut{};
    if (step != 0) {
      std::int64_t cum = 0;
      lut[0] = 0;
      for (int k = 0; k < 255; ++k) {
        cum += hist[static_cast<std::size_t>(k)];
        lut[static_cast<std::size_t>(k + 1)] =
            static_cast<std::uint8_t>(std::min<std::int64_t>((cum + step / 2) / step, 255));
      }
    } else {
      for (int k = 0; k < 256; ++k) lut[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(k);
    }
    for (std::int64_t i = 0; i < plane; ++i)
      o[i] = static_cast<float>(lut[q[static_cast<std::size_t>(i)]]) * down;
  }
}

}  // namespace cohort::data::functional
