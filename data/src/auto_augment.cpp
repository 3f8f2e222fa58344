// The automatic augmentations of torchvision.transforms.v2 (transforms.hpp): TrivialAugmentWide,
// RandAugment and AutoAugment with its three policies. Each is a table of operations with their
// magnitude bins (torchvision's _AUGMENTATION_SPACE, evaluated as its float32 torch.linspace
// does), a way to pick operations per sample from the sample's key (the plan), and one function
// that applies an operation as _apply_image_or_video_transform does (functional.hpp). The tables
// and the plans' rules are checked against torchvision's in tests/data/test_augment.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/data/functional.hpp"
#include "cohort/data/transforms.hpp"

namespace cohort::data {
namespace detail {
namespace {

using Op = AugmentOp;

// torch.linspace(start, end, steps) in float32: step = (end - start) / (steps - 1); the first
// half counts up from start, the second down from end, each a fused multiply-add.
float linspace_at(double start, double end, int steps, int i) {
  const float s = static_cast<float>(start), e = static_cast<float>(end);
  if (steps == 1) return s;
  const float step = (e - s) / static_cast<float>(steps - 1);
  return i < steps / 2 ? std::fma(static_cast<float>(i), step, s)
                       : std::fma(-static_cast<float>(steps - 1 - i), step, e);
}

// (8 - arange(bins) / ((bins - 1) / div)).round().int(): float32 division, half to even.
double posterize_bits(int bins, int i, double div) {
  const float d = static_cast<float>((bins - 1) / div);
  return std::nearbyint(8.0f - static_cast<float>(i) / d);
}

struct SpaceEntry {
  Op op;
  bool has_magnitudes;
  bool is_signed;
};

// The operations of each augmentation, in the order of torchvision's _AUGMENTATION_SPACE keys
// (a plan's randint picks by this position).
const std::vector<SpaceEntry>& entries(AugmentSpace space) {
  static const std::vector<SpaceEntry> wide = {
      {Op::identity, false, false},  {Op::shear_x, true, true},   {Op::shear_y, true, true},
      {Op::translate_x, true, true}, {Op::translate_y, true, true}, {Op::rotate, true, true},
      {Op::brightness, true, true},  {Op::color, true, true},     {Op::contrast, true, true},
      {Op::sharpness, true, true},   {Op::posterize, true, false}, {Op::solarize, true, false},
      {Op::autocontrast, false, false}, {Op::equalize, false, false}};
  static const std::vector<SpaceEntry> autoaug = {
      {Op::shear_x, true, true},    {Op::shear_y, true, true},    {Op::translate_x, true, true},
      {Op::translate_y, true, true}, {Op::rotate, true, true},    {Op::brightness, true, true},
      {Op::color, true, true},      {Op::contrast, true, true},   {Op::sharpness, true, true},
      {Op::posterize, true, false}, {Op::solarize, true, false},  {Op::autocontrast, false, false},
      {Op::equalize, false, false}, {Op::invert, false, false}};
  // RandAugment's and TrivialAugmentWide's spaces list the same operations in the same order.
  return space == AugmentSpace::auto_augment ? autoaug : wide;
}

const SpaceEntry& entry(AugmentSpace space, Op op) {
  for (const SpaceEntry& e : entries(space))
    if (e.op == op) return e;
  COHORT_FAIL("augmentation: ", augment_op_name(op), " is not in this augmentation's space");
}

}  // namespace

const char* augment_op_name(AugmentOp op) {
  switch (op) {
    case Op::identity: return "Identity";
    case Op::shear_x: return "ShearX";
    case Op::shear_y: return "ShearY";
    case Op::translate_x: return "TranslateX";
    case Op::translate_y: return "TranslateY";
    case Op::rotate: return "Rotate";
    case Op::brightness: return "Brightness";
    case Op::color: return "Color";
    case Op::contrast: return "Contrast";
    case Op::sharpness: return "Sharpness";
    case Op::posterize: return "Posterize";
    case Op::solarize: return "Solarize";
    case Op::autocontrast: return "AutoContrast";
    case Op::equalize: return "Equalize";
    case Op::invert: return "Invert";
  }
  return "?";
}

std::vector<AugmentOp> augment_ops(AugmentSpace space) {
  std::vector<AugmentOp> ops;
  for (const SpaceEntry& e : entries(space)) ops.push_back(e.op);
  return ops;
}

bool augment_signed(AugmentSpace space, AugmentOp op) { return entry(space, op).is_signed; }

std::vector<double> augment_magnitudes(AugmentSpace space, AugmentOp op, int bins,
                                       std::int64_t height, std::int64_t width) {
  if (!entry(space, op).has_magnitudes) return {};
  const bool wide = space == AugmentSpace::trivial_augment_wide;
  const double H = static_cast<double>(height), W = static_cast<double>(width);
  std::vector<double> m(static_cast<std::size_t>(bins));
  for (int i = 0; i < bins; ++i) {
    double v = 0.0;
    switch (op) {
      case Op::shear_x:
      case Op::shear_y: v = linspace_at(0.0, wide ? 0.99 : 0.3, bins, i); break;
      case Op::translate_x: v = linspace_at(0.0, wide ? 32.0 : 150.0 / 331.0 * W, bins, i); break;
      case Op::translate_y: v = linspace_at(0.0, wide ? 32.0 : 150.0 / 331.0 * H, bins, i); break;
      case Op::rotate: v = linspace_at(0.0, wide ? 135.0 : 30.0, bins, i); break;
      case Op::brightness:
      case Op::color:
      case Op::contrast:
      case Op::sharpness: v = linspace_at(0.0, wide ? 0.99 : 0.9, bins, i); break;
      case Op::posterize: v = posterize_bits(bins, i, wide ? 6.0 : 4.0); break;
      case Op::solarize: v = linspace_at(1.0, 0.0, bins, i); break;
      default: break;
    }
    m[static_cast<std::size_t>(i)] = v;
  }
  return m;
}

void apply_augment_op(const float* in, const Shape& s, AugmentOp op, double magnitude,
                      Interpolation mode, const std::vector<float>& fill, float* out) {
  namespace F = functional;
  constexpr double kDegrees = 180.0 / 3.14159265358979323846;  // Python's math.degrees
  F::Affine a;
  switch (op) {
    case Op::identity:
      if (out != in) std::memmove(out, in, sizeof(float) * static_cast<std::size_t>(s.numel()));
      return;
    case Op::shear_x:
    case Op::shear_y:
      a.shear[op == Op::shear_x ? 0 : 1] = std::atan(magnitude) * kDegrees;
      a.has_center = true;  // center=[0, 0]: the top-left corner
      return F::affine(in, s, a, mode, fill, out);
    case Op::translate_x:
    case Op::translate_y:
      a.translate[op == Op::translate_x ? 0 : 1] = std::trunc(magnitude);  // int(magnitude)
      return F::affine(in, s, a, mode, fill, out);
    case Op::rotate: return F::rotate(in, s, magnitude, mode, fill, out);
    case Op::brightness: return F::adjust_brightness(in, s, 1.0 + magnitude, out);
    case Op::color: return F::adjust_saturation(in, s, 1.0 + magnitude, out);
    case Op::contrast: return F::adjust_contrast(in, s, 1.0 + magnitude, out);
    case Op::sharpness: return F::adjust_sharpness(in, s, 1.0 + magnitude, out);
    case Op::posterize: return F::posterize(in, s, static_cast<int>(magnitude), out);
    case Op::solarize: return F::solarize(in, s, static_cast<float>(1.0 * magnitude), out);
    case Op::autocontrast: return F::autocontrast(in, s, out);
    case Op::equalize: return F::equalize(in, s, out);
    case Op::invert: return F::invert(in, s, out);
  }
}

}  // namespace detail

namespace {

using detail::AugmentOp;
using detail::AugmentSpace;
using detail::AugmentStep;

// Uniform draws u[i] in [0, 1) of a sample's augmentation stream.
class Draws {
 public:
  explicit Draws(std::uint64_t key) : key_(key) {}
  float operator()(std::uint64_t i) const {
    return rng::u32_to_unit(rng::philox_block(key_, 0x4155474dull * 256 + i / 4).v[i % 4]);  // "AUGM"
  }

 private:
  std::uint64_t key_;
};

std::int64_t pick(float u, std::int64_t n) {  // torch.randint(n)
  return std::min<std::int64_t>(static_cast<std::int64_t>(u * static_cast<double>(n)), n - 1);
}

class AugmentBase : public Transform, public detail::AugmentPlanner {
 public:
  AugmentBase(const char* name, Interpolation mode, std::vector<float> fill)
      : name_(name), mode_(mode), fill_(std::move(fill)) {
    COHORT_CHECK(mode != Interpolation::bicubic, name_,
                 ": interpolation bicubic is not available for the geometric operations on "
                 "tensors (nearest or bilinear; torchvision's tensor path refuses it too)");
  }
  const char* name() const { return name_; }
  Shape output_shape(const Shape& in) const override {
    COHORT_CHECK(in.rank() == 3 && (in[0] == 1 || in[0] == 3), name(),
                 ": takes [C, H, W] images with 1 or 3 channels, got ", in.str());
    COHORT_CHECK(fill_.size() <= 1 || static_cast<std::int64_t>(fill_.size()) == in[0], name(),
                 ": ", fill_.size(), " fill values for images with ", in[0], " channels");
    return in;
  }
  void apply(const float* in, const Shape& s, float* out, std::uint64_t key) const override {
    const std::vector<AugmentStep> steps = plan(key, s[1], s[2]);
    std::memcpy(out, in, sizeof(float) * static_cast<std::size_t>(s.numel()));
    for (const AugmentStep& st : steps)
      detail::apply_augment_op(out, s, st.op, st.magnitude, mode_, fill_, out);
  }

 protected:
  // The magnitude of `op` at `bin`, negated when the op is signed and the draw says so.
  static double magnitude(AugmentSpace space, AugmentOp op, int bins, int bin, float u_sign,
                          std::int64_t h, std::int64_t w) {
    const std::vector<double> m = detail::augment_magnitudes(space, op, bins, h, w);
    if (m.empty()) return 0.0;
    double v = m[static_cast<std::size_t>(bin)];
    if (detail::augment_signed(space, op) && u_sign <= 0.5f) v = -v;  // torch.rand(()) <= 0.5
    return v;
  }

  const char* name_;
  Interpolation mode_;
  std::vector<float> fill_;
};

class TrivialAugmentWide final : public AugmentBase {
 public:
  TrivialAugmentWide(int bins, Interpolation mode, std::vector<float> fill)
      : AugmentBase("trivial_augment_wide", mode, std::move(fill)), bins_(bins) {
    COHORT_CHECK(bins >= 2, "trivial_augment_wide: num_magnitude_bins ", bins, " must be >= 2");
  }
  // op = randint(14); bin = randint(bins); sign: rand() <= 0.5 (draws 0, 1, 2).
  std::vector<AugmentStep> plan(std::uint64_t key, std::int64_t h, std::int64_t w) const override {
    const Draws u(key);
    const std::vector<AugmentOp> ops = detail::augment_ops(AugmentSpace::trivial_augment_wide);
    const AugmentOp op = ops[static_cast<std::size_t>(pick(u(0), static_cast<std::int64_t>(ops.size())))];
    const int bin = static_cast<int>(pick(u(1), bins_));
    return {{op, magnitude(AugmentSpace::trivial_augment_wide, op, bins_, bin, u(2), h, w)}};
  }

 private:
  int bins_;
};

class RandAugment final : public AugmentBase {
 public:
  RandAugment(int num_ops, int mag, int bins, Interpolation mode, std::vector<float> fill)
      : AugmentBase("rand_augment", mode, std::move(fill)), num_ops_(num_ops), magnitude_(mag),
        bins_(bins) {
    COHORT_CHECK(num_ops >= 0, "rand_augment: num_ops ", num_ops, " must be >= 0");
    COHORT_CHECK(bins >= 2, "rand_augment: num_magnitude_bins ", bins, " must be >= 2");
    COHORT_CHECK(mag >= 0 && mag < bins, "rand_augment: magnitude ", mag,
                 " must be in [0, num_magnitude_bins) = [0, ", bins, ")");
  }
  // For each of num_ops: op = randint(14), sign: rand() <= 0.5 (draws 2i, 2i + 1).
  std::vector<AugmentStep> plan(std::uint64_t key, std::int64_t h, std::int64_t w) const override {
    const Draws u(key);
    const std::vector<AugmentOp> ops = detail::augment_ops(AugmentSpace::rand_augment);
    std::vector<AugmentStep> steps;
    for (int i = 0; i < num_ops_; ++i) {
      const AugmentOp op = ops[static_cast<std::size_t>(
          pick(u(2 * static_cast<std::uint64_t>(i)), static_cast<std::int64_t>(ops.size())))];
      steps.push_back({op, magnitude(AugmentSpace::rand_augment, op, bins_, magnitude_,
                                     u(2 * static_cast<std::uint64_t>(i) + 1), h, w)});
    }
    return steps;
  }

 private:
  int num_ops_, magnitude_, bins_;
};

using detail::AugmentSubPolicy;
using SubPolicy = AugmentSubPolicy;
using Policy = std::vector<std::pair<SubPolicy, SubPolicy>>;

// torchvision's AutoAugment._get_policies (the AutoAugment paper's learned policies).
const Policy& policy_table(AutoAugmentPolicy which) {
  using O = AugmentOp;
  static const Policy imagenet = {
      {{O::posterize, 0.4f, 8}, {O::rotate, 0.6f, 9}},
      {{O::solarize, 0.6f, 5}, {O::autocontrast, 0.6f, -1}},
      {{O::equalize, 0.8f, -1}, {O::equalize, 0.6f, -1}},
      {{O::posterize, 0.6f, 7}, {O::posterize, 0.6f, 6}},
      {{O::equalize, 0.4f, -1}, {O::solarize, 0.2f, 4}},
      {{O::equalize, 0.4f, -1}, {O::rotate, 0.8f, 8}},
      {{O::solarize, 0.6f, 3}, {O::equalize, 0.6f, -1}},
      {{O::posterize, 0.8f, 5}, {O::equalize, 1.0f, -1}},
      {{O::rotate, 0.2f, 3}, {O::solarize, 0.6f, 8}},
      {{O::equalize, 0.6f, -1}, {O::posterize, 0.4f, 6}},
      {{O::rotate, 0.8f, 8}, {O::color, 0.4f, 0}},
      {{O::rotate, 0.4f, 9}, {O::equalize, 0.6f, -1}},
      {{O::equalize, 0.0f, -1}, {O::equalize, 0.8f, -1}},
      {{O::invert, 0.6f, -1}, {O::equalize, 1.0f, -1}},
      {{O::color, 0.6f, 4}, {O::contrast, 1.0f, 8}},
      {{O::rotate, 0.8f, 8}, {O::color, 1.0f, 2}},
      {{O::color, 0.8f, 8}, {O::solarize, 0.8f, 7}},
      {{O::sharpness, 0.4f, 7}, {O::invert, 0.6f, -1}},
      {{O::shear_x, 0.6f, 5}, {O::equalize, 1.0f, -1}},
      {{O::color, 0.4f, 0}, {O::equalize, 0.6f, -1}},
      {{O::equalize, 0.4f, -1}, {O::solarize, 0.2f, 4}},
      {{O::solarize, 0.6f, 5}, {O::autocontrast, 0.6f, -1}},
      {{O::invert, 0.6f, -1}, {O::equalize, 1.0f, -1}},
      {{O::color, 0.6f, 4}, {O::contrast, 1.0f, 8}},
      {{O::equalize, 0.8f, -1}, {O::equalize, 0.6f, -1}},
  };
  static const Policy cifar10 = {
      {{O::invert, 0.1f, -1}, {O::contrast, 0.2f, 6}},
      {{O::rotate, 0.7f, 2}, {O::translate_x, 0.3f, 9}},
      {{O::sharpness, 0.8f, 1}, {O::sharpness, 0.9f, 3}},
      {{O::shear_y, 0.5f, 8}, {O::translate_y, 0.7f, 9}},
      {{O::autocontrast, 0.5f, -1}, {O::equalize, 0.9f, -1}},
      {{O::shear_y, 0.2f, 7}, {O::posterize, 0.3f, 7}},
      {{O::color, 0.4f, 3}, {O::brightness, 0.6f, 7}},
      {{O::sharpness, 0.3f, 9}, {O::brightness, 0.7f, 9}},
      {{O::equalize, 0.6f, -1}, {O::equalize, 0.5f, -1}},
      {{O::contrast, 0.6f, 7}, {O::sharpness, 0.6f, 5}},
      {{O::color, 0.7f, 7}, {O::translate_x, 0.5f, 8}},
      {{O::equalize, 0.3f, -1}, {O::autocontrast, 0.4f, -1}},
      {{O::translate_y, 0.4f, 3}, {O::sharpness, 0.2f, 6}},
      {{O::brightness, 0.9f, 6}, {O::color, 0.2f, 8}},
      {{O::solarize, 0.5f, 2}, {O::invert, 0.0f, -1}},
      {{O::equalize, 0.2f, -1}, {O::autocontrast, 0.6f, -1}},
      {{O::equalize, 0.2f, -1}, {O::equalize, 0.6f, -1}},
      {{O::color, 0.9f, 9}, {O::equalize, 0.6f, -1}},
      {{O::autocontrast, 0.8f, -1}, {O::solarize, 0.2f, 8}},
      {{O::brightness, 0.1f, 3}, {O::color, 0.7f, 0}},
      {{O::solarize, 0.4f, 5}, {O::autocontrast, 0.9f, -1}},
      {{O::translate_y, 0.9f, 9}, {O::translate_y, 0.7f, 9}},
      {{O::autocontrast, 0.9f, -1}, {O::solarize, 0.8f, 3}},
      {{O::equalize, 0.8f, -1}, {O::invert, 0.1f, -1}},
      {{O::translate_y, 0.7f, 9}, {O::autocontrast, 0.9f, -1}},
  };
  static const Policy svhn = {
      {{O::shear_x, 0.9f, 4}, {O::invert, 0.2f, -1}},
      {{O::shear_y, 0.9f, 8}, {O::invert, 0.7f, -1}},
      {{O::equalize, 0.6f, -1}, {O::solarize, 0.6f, 6}},
      {{O::invert, 0.9f, -1}, {O::equalize, 0.6f, -1}},
      {{O::equalize, 0.6f, -1}, {O::rotate, 0.9f, 3}},
      {{O::shear_x, 0.9f, 4}, {O::autocontrast, 0.8f, -1}},
      {{O::shear_y, 0.9f, 8}, {O::invert, 0.4f, -1}},
      {{O::shear_y, 0.9f, 5}, {O::solarize, 0.2f, 6}},
      {{O::invert, 0.9f, -1}, {O::autocontrast, 0.8f, -1}},
      {{O::equalize, 0.6f, -1}, {O::rotate, 0.9f, 3}},
      {{O::shear_x, 0.9f, 4}, {O::solarize, 0.3f, 3}},
      {{O::shear_y, 0.8f, 8}, {O::invert, 0.7f, -1}},
      {{O::equalize, 0.9f, -1}, {O::translate_y, 0.6f, 6}},
      {{O::invert, 0.9f, -1}, {O::equalize, 0.6f, -1}},
      {{O::contrast, 0.3f, 3}, {O::rotate, 0.8f, 4}},
      {{O::invert, 0.8f, -1}, {O::translate_y, 0.0f, 2}},
      {{O::shear_y, 0.7f, 6}, {O::solarize, 0.4f, 8}},
      {{O::invert, 0.6f, -1}, {O::rotate, 0.8f, 4}},
      {{O::shear_y, 0.3f, 7}, {O::translate_x, 0.9f, 3}},
      {{O::shear_x, 0.1f, 6}, {O::invert, 0.6f, -1}},
      {{O::solarize, 0.7f, 2}, {O::translate_y, 0.6f, 7}},
      {{O::shear_y, 0.8f, 4}, {O::invert, 0.8f, -1}},
      {{O::shear_x, 0.7f, 9}, {O::translate_y, 0.8f, 3}},
      {{O::shear_y, 0.8f, 5}, {O::autocontrast, 0.7f, -1}},
      {{O::shear_x, 0.7f, 2}, {O::invert, 0.1f, -1}},
  };
  switch (which) {
    case AutoAugmentPolicy::imagenet: return imagenet;
    case AutoAugmentPolicy::cifar10: return cifar10;
    case AutoAugmentPolicy::svhn: return svhn;
  }
  return imagenet;
}

class AutoAugment final : public AugmentBase {
 public:
  AutoAugment(AutoAugmentPolicy policy, Interpolation mode, std::vector<float> fill)
      : AugmentBase("auto_augment", mode, std::move(fill)), policy_(policy) {}
  // policy = randint(25) (draw 0); for each of its two operations: applied when rand() <= p
  // (draws 1, 3), its sign rand() <= 0.5 (draws 2, 4), 10 magnitude bins.
  std::vector<AugmentStep> plan(std::uint64_t key, std::int64_t h, std::int64_t w) const override {
    const Draws u(key);
    const Policy& table = policy_table(policy_);
    const auto& sub = table[static_cast<std::size_t>(pick(u(0), static_cast<std::int64_t>(table.size())))];
    std::vector<AugmentStep> steps;
    for (int k = 0; k < 2; ++k) {
      const SubPolicy& sp = k == 0 ? sub.first : sub.second;
      if (!(u(1 + 2 * static_cast<std::uint64_t>(k)) <= sp.p)) continue;
      const double m = sp.bin < 0 ? 0.0
                                  : magnitude(AugmentSpace::auto_augment, sp.op, 10, sp.bin,
                                              u(2 + 2 * static_cast<std::uint64_t>(k)), h, w);
      steps.push_back({sp.op, m});
    }
    return steps;
  }

 private:
  AutoAugmentPolicy policy_;
};

}  // namespace

namespace detail {
std::vector<AugmentStep> augment_plan(const Transform& t, std::uint64_t key, std::int64_t height,
                                      std::int64_t width) {
  const auto* p = dynamic_cast<const AugmentPlanner*>(&t);
  COHORT_CHECK(p != nullptr, "augment_plan: not an automatic augmentation transform");
  return p->plan(key, height, width);
}
std::vector<std::pair<AugmentSubPolicy, AugmentSubPolicy>> auto_augment_policy(
    AutoAugmentPolicy policy) {
  return policy_table(policy);
}
}  // namespace detail

TransformPtr trivial_augment_wide(int num_magnitude_bins, Interpolation mode,
                                  std::vector<float> fill) {
  return std::make_shared<TrivialAugmentWide>(num_magnitude_bins, mode, std::move(fill));
}
TransformPtr rand_augment(int num_ops, int magnitude, int num_magnitude_bins, Interpolation mode,
                          std::vector<float> fill) {
  return std::make_shared<RandAugment>(num_ops, magnitude, num_magnitude_bins, mode,
                                       std::move(fill));
}
TransformPtr auto_augment(AutoAugmentPolicy policy, Interpolation mode, std::vector<float> fill) {
  return std::make_shared<AutoAugment>(policy, mode, std::move(fill));
}
TransformPtr auto_augment_by_name(const std::string& name, Interpolation mode, int ra_magnitude) {
  if (name == "ta_wide") return trivial_augment_wide(31, mode);
  if (name == "ra") return rand_augment(2, ra_magnitude, 31, mode);
  if (name == "imagenet") return auto_augment(AutoAugmentPolicy::imagenet, mode);
  if (name == "cifar10") return auto_augment(AutoAugmentPolicy::cifar10, mode);
  if (name == "svhn") return auto_augment(AutoAugmentPolicy::svhn, mode);
  COHORT_FAIL("auto-augment policy '", name,
              "' is not one of ta_wide, ra, imagenet, cifar10, svhn (augmix is not available)");
}

}  // namespace cohort::data
