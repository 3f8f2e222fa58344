// MixUp and CutMix (transforms.hpp): torchvision.transforms.v2's arithmetic, in float32 with its
// roundings (this file is compiled without floating-point contraction: a fused multiply-add
// would change the last bit), and a Beta draw from the Philox stream.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/data/transforms.hpp"

namespace cohort::data {
namespace detail {
namespace {

// Uniforms in (0, 1) at stream positions 0, 1, 2, ... of `key`.
class Stream {
 public:
  explicit Stream(std::uint64_t key) : key_(key) {}
  double next() {
    const rng::U32x4 r = rng::philox_block(key_, n_ / 4);
    const std::uint32_t v = r.v[n_ % 4];
    ++n_;
    return (static_cast<double>(v) + 0.5) / 4294967296.0;
  }
  double normal() {  // Box-Muller, one of the pair
    const double u1 = next(), u2 = next();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t key_;
  std::uint64_t n_ = 0;
};

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 through shape + 1 and U^(1 / shape).
double gamma_draw(double shape, Stream& s) {
  if (shape < 1.0) return gamma_draw(shape + 1.0, s) * std::pow(s.next(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = s.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = s.next();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

void check_batch(const char* who, const Shape& s) {
  COHORT_CHECK(s.rank() == 4 && s[0] >= 1, who, ": expected a [rows, C, H, W] batch, got ",
               s.str());
}

// targets = f32(onehot(y) * f32(lam)) + f32(onehot(roll y) * f32(1 - lam)), as torchvision's
// label.roll(1, 0).mul_(1 - lam).add_(label.mul(lam)) in float32.
void mix_targets(const std::int64_t* labels, std::int64_t rows, std::int64_t classes, double lam,
                 float* targets) {
  const float keep = static_cast<float>(lam), take = static_cast<float>(1.0 - lam);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t own = labels[r], other = labels[(r + rows - 1) % rows];
    for (std::int64_t c = 0; c < classes; ++c) {
      const float a = (c == other ? 1.0f : 0.0f) * take;
      const float b = (c == own ? 1.0f : 0.0f) * keep;
      targets[r * classes + c] = a + b;
    }
  }
}

void check_labels(const char* who, const std::int64_t* labels, std::int64_t rows,
                  std::int64_t classes) {
  for (std::int64_t r = 0; r < rows; ++r)
    COHORT_CHECK(labels[r] >= 0 && labels[r] < classes, who, ": row ", r, " has label ",
                 labels[r], ", not a class index in [0, ", classes, ")");
}

}  // namespace

double beta_draw(float alpha, std::uint64_t key) {
  Stream s(key);
  const double x = gamma_draw(alpha, s), y = gamma_draw(alpha, s);
  return x + y > 0 ? x / (x + y) : 0.5;
}

void mixup_apply(float* images, const Shape& b, const std::int64_t* labels,
                 std::int64_t num_classes, double lam, float* targets) {
  check_batch("mixup", b);
  const std::int64_t rows = b[0], per = b.numel() / rows;
  check_labels("mixup", labels, rows, num_classes);
  // torchvision: inpt.roll(1, 0).mul_(1.0 - lam).add_(inpt.mul(lam)): row r mixes with row r-1.
  // In place from the last row down, so row r - 1 is still the original; the last row's
  // original is kept for row 0.
  const float keep = static_cast<float>(lam), take = static_cast<float>(1.0 - lam);
  const std::vector<float> last(images + (rows - 1) * per, images + rows * per);
  for (std::int64_t r = rows - 1; r >= 0; --r) {
    float* row = images + r * per;
    const float* prev = r > 0 ? images + (r - 1) * per : last.data();
    for (std::int64_t i = 0; i < per; ++i) {
      const float a = prev[i] * take;
      const float c = row[i] * keep;
      row[i] = a + c;
    }
  }
  mix_targets(labels, rows, num_classes, lam, targets);
}

CutBox cutmix_box(std::int64_t H, std::int64_t W, double lam, std::int64_t r_x, std::int64_t r_y) {
  const double r = 0.5 * std::sqrt(1.0 - lam);
  const auto r_w_half = static_cast<std::int64_t>(r * static_cast<double>(W));
  const auto r_h_half = static_cast<std::int64_t>(r * static_cast<double>(H));
  CutBox box;
  box.x1 = std::max<std::int64_t>(r_x - r_w_half, 0);
  box.y1 = std::max<std::int64_t>(r_y - r_h_half, 0);
  box.x2 = std::min<std::int64_t>(r_x + r_w_half, W);
  box.y2 = std::min<std::int64_t>(r_y + r_h_half, H);
  box.lam_adjusted = 1.0 - static_cast<double>((box.x2 - box.x1) * (box.y2 - box.y1)) /
                               static_cast<double>(W * H);
  return box;
}

void cutmix_apply(float* images, const Shape& b, const std::int64_t* labels,
                  std::int64_t num_classes, const CutBox& box, float* targets) {
  check_batch("cutmix", b);
  const std::int64_t rows = b[0], C = b[1], H = b[2], W = b[3], plane = H * W;
  check_labels("cutmix", labels, rows, num_classes);
  const std::int64_t per = C * plane;
  // output[..., y1:y2, x1:x2] = roll(x)[..., y1:y2, x1:x2]: row r takes row r-1's box; in place
  // from the last row down, the last row's original kept for row 0.
  const std::vector<float> last(images + (rows - 1) * per, images + rows * per);
  for (std::int64_t r = rows - 1; r >= 0; --r) {
    float* row = images + r * per;
    const float* prev = r > 0 ? images + (r - 1) * per : last.data();
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t y = box.y1; y < box.y2; ++y)
        std::copy(prev + c * plane + y * W + box.x1, prev + c * plane + y * W + box.x2,
                  row + c * plane + y * W + box.x1);
  }
  mix_targets(labels, rows, num_classes, box.lam_adjusted, targets);
}

}  // namespace detail

namespace {

std::string short_number(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", static_cast<double>(v));
  return b;
}

void check_alpha(const char* who, float alpha) {
  COHORT_CHECK(alpha > 0 && std::isfinite(alpha), who, ": alpha ", alpha, " must be > 0");
}

// What MixUp and CutMix share: the classes, a Beta(alpha, alpha) lam per batch (kept, as
// torchvision keeps it, as a float32 sample widened to a double), a name.
class BetaMix : public BatchTransform {
 public:
  BetaMix(const char* name, std::int64_t classes, float alpha)
      : classes_(classes), alpha_(alpha) {
    COHORT_CHECK(classes >= 1, name, ": num_classes ", classes, " must be >= 1");
    check_alpha(name, alpha);
  }
  std::int64_t num_classes() const override { return classes_; }

 protected:
  double lam(std::uint64_t key) const { return static_cast<float>(detail::beta_draw(alpha_, key)); }
  std::string named(const char* title) const {
    return std::string(title) + "(alpha=" + short_number(alpha_) + ")";
  }
  std::int64_t classes_;
  float alpha_;
};

class MixUp final : public BetaMix {
 public:
  MixUp(std::int64_t classes, float alpha) : BetaMix("mixup", classes, alpha) {}
  void apply(float* images, const Shape& b, const std::int64_t* labels, float* targets,
             std::uint64_t key) const override {
    detail::mixup_apply(images, b, labels, classes_, lam(key), targets);
  }
  std::string describe() const override { return named("MixUp"); }
};

class CutMix final : public BetaMix {
 public:
  CutMix(std::int64_t classes, float alpha) : BetaMix("cutmix", classes, alpha) {}
  void apply(float* images, const Shape& b, const std::int64_t* labels, float* targets,
             std::uint64_t key) const override {
    COHORT_CHECK(b.rank() == 4 && b[2] >= 1 && b[3] >= 1,
                 "cutmix: expected a [rows, C, H, W] batch, got ", b.str());
    const double l = lam(key);
    const rng::U32x4 r = rng::philox_block(key, 0x4355544d49ull);  // "CUTMI": the box's centre
    const std::int64_t H = b[2], W = b[3];
    const std::int64_t r_x = static_cast<std::int64_t>(r.v[0] % static_cast<std::uint32_t>(W));
    const std::int64_t r_y = static_cast<std::int64_t>(r.v[1] % static_cast<std::uint32_t>(H));
    detail::cutmix_apply(images, b, labels, classes_, detail::cutmix_box(H, W, l, r_x, r_y),
                         targets);
  }
  std::string describe() const override { return named("CutMix"); }
};

class EitherOf final : public BatchTransform {
 public:
  EitherOf(BatchTransformPtr a, BatchTransformPtr b) : a_(std::move(a)), b_(std::move(b)) {}
  void apply(float* images, const Shape& s, const std::int64_t* labels, float* targets,
             std::uint64_t key) const override {
    const rng::U32x4 r = rng::philox_block(key, 0x43484f4f5345ull);  // "CHOOSE"
    const std::uint64_t sub = (static_cast<std::uint64_t>(r.v[1]) << 32) | r.v[2];
    (r.v[0] & 1u ? b_ : a_)->apply(images, s, labels, targets, sub);
  }
  std::int64_t num_classes() const override { return a_->num_classes(); }
  std::string describe() const override {
    return "RandomChoice(" + a_->describe() + ", " + b_->describe() + ")";
  }

 private:
  BatchTransformPtr a_, b_;
};

}  // namespace

BatchTransformPtr mixup(std::int64_t num_classes, float alpha) {
  return std::make_shared<MixUp>(num_classes, alpha);
}
BatchTransformPtr cutmix(std::int64_t num_classes, float alpha) {
  return std::make_shared<CutMix>(num_classes, alpha);
}
BatchTransformPtr mixup_or_cutmix(std::int64_t num_classes, float mixup_alpha,
                                  float cutmix_alpha) {
  COHORT_CHECK(mixup_alpha >= 0 && cutmix_alpha >= 0 && (mixup_alpha > 0 || cutmix_alpha > 0),
               "mixup_or_cutmix: alphas ", mixup_alpha, " and ", cutmix_alpha,
               " (each >= 0, 0 leaving that transform out; not both 0)");
  if (cutmix_alpha == 0) return mixup(num_classes, mixup_alpha);
  if (mixup_alpha == 0) return cutmix(num_classes, cutmix_alpha);
  return std::make_shared<EitherOf>(mixup(num_classes, mixup_alpha),
                                    cutmix(num_classes, cutmix_alpha));
}

}  // namespace cohort::data
