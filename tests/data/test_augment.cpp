// Colour and automatic augmentation against torchvision (tests/golden/augment.json, made by
// tests/golden/make_augment_golden.py with the peers' torchvision.transforms.v2 on float32
// tensors): every functional operation, the operations as the augmentations apply them, ColorJitter
// with its draw pinned, resizing with nearest and bicubic; the augmentations' operation lists,
// magnitude tables and the AutoAugment policies equal torchvision's tables. Their draws by
// counting (uniform operation and bin choices, signs, probabilities); a transform's apply() equals
// its plan; DataLoaderOptions::skip_bad_samples on an image folder with a truncated file; bad
// arguments named.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../common/golden.hpp"
#include "../common/testing.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/functional.hpp"
#include "cohort/data/image_folder.hpp"
#include "cohort/data/transforms.hpp"
#include "cohort/devices.hpp"

namespace fs = std::filesystem;
using namespace cohort::data;
using cohort::Shape;
using cohort::testing::error_of;
using cohort::testing::TempDir;
using cohort::data::detail::AugmentOp;
using cohort::data::detail::AugmentSpace;

namespace F = cohort::data::functional;

namespace {

const nlohmann::json& golden() { return cohort::testing::golden_json("augment.json"); }

using cohort::testing::mentions;

struct Image {
  Shape shape;
  std::vector<float> data;
};

Image input(const std::string& name) {
  const auto& j = golden().at("inputs").at(name);
  return {Shape(j.at("shape").get<std::vector<std::int64_t>>()), j.at("data").get<std::vector<float>>()};
}

Interpolation interp(const nlohmann::json& j) {
  return parse_interpolation(j.get<std::string>());
}

AugmentOp op_named(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(AugmentOp::invert); ++i)
    if (detail::augment_op_name(static_cast<AugmentOp>(i)) == name) return static_cast<AugmentOp>(i);
  FAIL("no augmentation op named ", name);
  return AugmentOp::identity;
}

// How far two images are apart: the largest difference and how many values differ by more than
// `tol`.
struct Gap {
  double max = 0;
  std::size_t over = 0;
};
Gap gap(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  REQUIRE(got.size() == want.size());
  Gap g;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    g.max = std::max(g.max, d);
    g.over += d > tol;
  }
  return g;
}

// Runs a "functional" golden case through functional.hpp.
std::vector<float> run_functional(const nlohmann::json& c) {
  const Image in = input(c.at("input"));
  const std::string op = c.at("op");
  const auto& p = c.at("params");
  std::vector<float> out(in.data.size());
  const float* x = in.data.data();
  if (op == "adjust_brightness") F::adjust_brightness(x, in.shape, p.at("brightness_factor"), out.data());
  else if (op == "adjust_contrast") F::adjust_contrast(x, in.shape, p.at("contrast_factor"), out.data());
  else if (op == "adjust_saturation") F::adjust_saturation(x, in.shape, p.at("saturation_factor"), out.data());
  else if (op == "adjust_sharpness") F::adjust_sharpness(x, in.shape, p.at("sharpness_factor"), out.data());
  else if (op == "adjust_hue") F::adjust_hue(x, in.shape, p.at("hue_factor"), out.data());
  else if (op == "posterize") F::posterize(x, in.shape, p.at("bits"), out.data());
  else if (op == "solarize") F::solarize(x, in.shape, p.at("threshold").get<float>(), out.data());
  else if (op == "autocontrast") F::autocontrast(x, in.shape, out.data());
  else if (op == "equalize") F::equalize(x, in.shape, out.data());
  else if (op == "invert") F::invert(x, in.shape, out.data());
  else if (op == "affine") {
    F::Affine a;
    a.angle = p.at("angle");
    a.translate[0] = p.at("translate")[0];
    a.translate[1] = p.at("translate")[1];
    a.scale = p.at("scale");
    a.shear[0] = p.at("shear")[0];
    a.shear[1] = p.at("shear")[1];
    if (!p.at("center").is_null()) {
      a.has_center = true;
      a.center[0] = p.at("center")[0];
      a.center[1] = p.at("center")[1];
    }
    F::affine(x, in.shape, a, interp(p.at("interpolation")), {}, out.data());
  } else if (op == "rotate") {
    F::rotate(x, in.shape, p.at("angle"), interp(p.at("interpolation")), {}, out.data());
  } else if (op == "resize" || op == "resized_crop") {
    const auto size = p.at("size").get<std::vector<std::int64_t>>();
    detail::CropBox box{0, 0, in.shape[1], in.shape[2]};
    if (op == "resized_crop")
      box = {p.at("top"), p.at("left"), p.at("height"), p.at("width")};
    out.resize(static_cast<std::size_t>(in.shape[0] * size[0] * size[1]));
    detail::resized_crop(x, in.shape, box, size[0], size[1], out.data(),
                         interp(p.at("interpolation")));
  } else {
    FAIL("unknown functional op ", op);
  }
  return out;
}

}  // namespace

TEST_CASE("functional operations equal torchvision's on float images") {
  const auto& cases = golden().at("functional");
  REQUIRE(cases.size() >= 60);
  std::map<std::string, int> seen;
  for (const auto& c : cases) {
    const std::string name = c.at("name");
    CAPTURE(name);
    const std::vector<float> got = run_functional(c);
    const auto want = c.at("data").get<std::vector<float>>();
    // Bit for bit: the fused multiply-adds of ATen's kernels are written out (functional.hpp's
    // sources), nearest sampling included. Within a few float32 ulps where ATen sums in an order
    // of its own: the mean of adjust_contrast, sharpness's conv2d, the resampling filters.
    const std::string op = c.at("op");
    const bool summed = op == "adjust_contrast" || op == "resize" || op == "resized_crop" ||
                        (op == "adjust_sharpness" && c.at("input") == "gray");
    const Gap g = gap(got, want, 0);
    if (summed) {
      CHECK(g.max <= 5e-7);
    } else {
      CHECK(g.max == 0);
    }
    ++seen[op];
  }
  CHECK(seen.size() >= 14);
}

TEST_CASE("augmentation operations as torchvision's augmentations apply them") {
  const auto& cases = golden().at("augment_apply");
  REQUIRE(cases.size() >= 20);
  std::map<std::string, int> ops;
  for (const auto& c : cases) {
    const std::string op = c.at("op");
    const double m = c.at("magnitude");
    CAPTURE(op);
    CAPTURE(m);
    const Image in = input(c.at("input"));
    std::vector<float> out(in.data.size());
    detail::apply_augment_op(in.data.data(), in.shape, op_named(op), m,
                             interp(c.at("interpolation")), {}, out.data());
    // Bit for bit but for Contrast's mean (a float32 ulp).
    const Gap g = gap(out, c.at("data").get<std::vector<float>>(), 0);
    CHECK(g.max <= (op == "Contrast" ? 2e-7 : 0.0));
    ++ops[op];
  }
  CHECK(ops.size() == 15);
}

TEST_CASE("ColorJitter with its draw pinned equals torchvision's order of adjustments") {
  const auto& cases = golden().at("color_jitter").at("cases");
  REQUIRE(cases.size() >= 4);
  for (const auto& c : cases) {
    CAPTURE(c.at("params").dump());
    const Image in = input(c.at("input"));
    detail::JitterDraw d{};
    const auto order = c.at("order").get<std::vector<int>>();
    const auto& f = c.at("factors");
    const char* names[4] = {"brightness", "contrast", "saturation", "hue"};
    for (int k = 0; k < 4; ++k) {
      d.order[k] = order[static_cast<std::size_t>(k)];
      d.present[k] = !f.at(names[k]).is_null();
      d.factor[k] = d.present[k] ? f.at(names[k]).get<float>() : 0.0f;
    }
    std::vector<float> out(in.data.size());
    detail::color_jitter_apply(in.data.data(), in.shape, d, out.data());
    CHECK(gap(out, c.at("data").get<std::vector<float>>(), 2e-6).max <= 2e-6);
  }
}

TEST_CASE("augmentation spaces and the AutoAugment policies equal torchvision's tables") {
  const auto& spaces = golden().at("spaces");
  const std::map<std::string, std::pair<AugmentSpace, int>> kinds = {
      {"TrivialAugmentWide", {AugmentSpace::trivial_augment_wide, 31}},
      {"RandAugment", {AugmentSpace::rand_augment, 31}},
      {"AutoAugment", {AugmentSpace::auto_augment, 10}}};
  for (const auto& [name, kind] : kinds) {
    CAPTURE(name);
    const auto& s = spaces.at(name);
    std::vector<std::string> ops;
    for (AugmentOp op : detail::augment_ops(kind.first)) ops.push_back(detail::augment_op_name(op));
    CHECK(ops == s.at("ops").get<std::vector<std::string>>());
    for (const auto& [size, table] : s.at("magnitudes").items()) {
      const std::int64_t h = std::stoll(size.substr(0, size.find('x')));
      const std::int64_t w = std::stoll(size.substr(size.find('x') + 1));
      CAPTURE(size);
      for (const auto& [op, want] : table.items()) {
        CAPTURE(op);
        const std::vector<double> got =
            detail::augment_magnitudes(kind.first, op_named(op), kind.second, h, w);
        if (want.is_null()) {
          CHECK(got.empty());
        } else {
          const auto w_values = want.get<std::vector<double>>();
          REQUIRE(got.size() == w_values.size());
          for (std::size_t i = 0; i < got.size(); ++i)
            CHECK(static_cast<float>(got[i]) == static_cast<float>(w_values[i]));
        }
      }
    }
    for (const auto& [op, sign] : s.at("signed").items())
      CHECK(detail::augment_signed(kind.first, op_named(op)) == sign.get<bool>());
  }
  const auto& want = golden().at("spaces").at("imagenet_policy");
  const auto got = detail::auto_augment_policy(AutoAugmentPolicy::imagenet);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const detail::AugmentSubPolicy pair[2] = {got[i].first, got[i].second};
    for (std::size_t k = 0; k < 2; ++k) {
      const auto& w = want[i][k];
      CAPTURE(i);
      CHECK(detail::augment_op_name(pair[k].op) == w[0].get<std::string>());
      CHECK(pair[k].p == doctest::Approx(w[1].get<double>()));
      CHECK(pair[k].bin == (w[2].is_null() ? -1 : w[2].get<int>()));
    }
  }
}

TEST_CASE("augmentation draws: uniform choices, signs and probabilities as torchvision draws them") {
  const int n = 14000;
  // TrivialAugmentWide: one op of 14 and one bin of 31, uniformly; signed ops negative half the
  // time (torch.rand(()) <= 0.5).
  const TransformPtr ta = trivial_augment_wide();
  std::map<AugmentOp, int> ops;
  std::map<double, int> rotate_bins;
  int signed_ops = 0, negative = 0;
  for (int k = 0; k < n; ++k) {
    const auto plan = detail::augment_plan(*ta, 1000003ull * static_cast<std::uint64_t>(k) + 17, 224, 224);
    REQUIRE(plan.size() == 1);
    ++ops[plan[0].op];
    if (plan[0].op == AugmentOp::rotate) ++rotate_bins[std::abs(plan[0].magnitude)];
    if (detail::augment_signed(AugmentSpace::trivial_augment_wide, plan[0].op) &&
        plan[0].magnitude != 0) {
      ++signed_ops;
      negative += plan[0].magnitude < 0;
    }
  }
  CHECK(ops.size() == 14);
  for (const auto& [op, count] : ops) {
    CAPTURE(detail::augment_op_name(op));
    CHECK(std::abs(count - n / 14) < 4 * std::sqrt(n / 14.0));  // 4 sigma
  }
  CHECK(rotate_bins.size() == 31);  // 0 (bin 0, unsigned in effect) to 135
  CHECK(std::abs(negative - signed_ops / 2) < 4 * std::sqrt(signed_ops / 4.0));

  // RandAugment: num_ops steps, all at the fixed bin (magnitude 9 of 31: rotate 9 degrees).
  const TransformPtr ra = rand_augment(3, 9, 31);
  for (int k = 0; k < 200; ++k) {
    const auto plan = detail::augment_plan(*ra, static_cast<std::uint64_t>(k), 64, 48);
    REQUIRE(plan.size() == 3);
    for (const auto& st : plan)
      if (st.op == AugmentOp::rotate) CHECK(std::abs(st.magnitude) == doctest::Approx(9.0));
  }

  // AutoAugment: a sub-policy applied with its probability: policy 12 is (Equalize 0.0,
  // Equalize 0.8); over all draws the number of steps averages the policies' mean probability sum.
  const TransformPtr aa = auto_augment();
  const auto table = detail::auto_augment_policy(AutoAugmentPolicy::imagenet);
  double expected = 0;
  for (const auto& sp : table) expected += sp.first.p + sp.second.p;
  expected /= static_cast<double>(table.size());
  double steps = 0;
  for (int k = 0; k < n; ++k)
    steps += static_cast<double>(detail::augment_plan(*aa, static_cast<std::uint64_t>(k) * 7919, 32, 32).size());
  CHECK(steps / n == doctest::Approx(expected).epsilon(0.03));
}

TEST_CASE("augmentation transforms: apply() runs the plan, keyed per sample") {
  const Image in = input("rgb");
  for (const TransformPtr& t :
       {trivial_augment_wide(31, Interpolation::bilinear), rand_augment(2, 9, 31),
        auto_augment(AutoAugmentPolicy::imagenet), auto_augment(AutoAugmentPolicy::cifar10),
        auto_augment(AutoAugmentPolicy::svhn, Interpolation::nearest, {0.5f})}) {
    CHECK(t->output_shape(in.shape) == in.shape);
    CHECK_FALSE(t->fixes_size());
    int changed = 0;
    for (std::uint64_t key = 0; key < 40; ++key) {
      std::vector<float> got(in.data.size()), again(in.data.size()), want = in.data;
      t->apply(in.data.data(), in.shape, got.data(), key);
      t->apply(in.data.data(), in.shape, again.data(), key);
      CHECK(got == again);
      changed += got != want;
    }
    CHECK(changed > 10);
  }
  // The plan, step by step, by hand: what TrivialAugmentWide with bilinear does to one sample.
  const TransformPtr ta = trivial_augment_wide(31, Interpolation::bilinear);
  for (std::uint64_t key = 100; key < 120; ++key) {
    std::vector<float> got(in.data.size()), want = in.data;
    ta->apply(in.data.data(), in.shape, got.data(), key);
    for (const auto& st : detail::augment_plan(*ta, key, in.shape[1], in.shape[2]))
      detail::apply_augment_op(want.data(), in.shape, st.op, st.magnitude, Interpolation::bilinear,
                               {}, want.data());
    CHECK(got == want);
  }
  // ColorJitter: deterministic per key, and factors within the ranges.
  const TransformPtr cj = color_jitter(0.4f, 0.4f, 0.4f, 0.1f);
  detail::JitterRanges r;
  r.brightness = r.contrast = r.saturation = {0.6, 1.4, true};
  r.hue = {-0.1, 0.1, true};
  std::map<int, int> first;
  for (std::uint64_t key = 0; key < 4000; ++key) {
    const detail::JitterDraw d = detail::color_jitter_draw(r, key);
    std::vector<int> order(d.order, d.order + 4);
    std::sort(order.begin(), order.end());
    CHECK(order == std::vector<int>{0, 1, 2, 3});
    ++first[d.order[0]];
    for (int k = 0; k < 3; ++k) CHECK((d.factor[k] >= 0.6f && d.factor[k] <= 1.4f));
    CHECK((d.factor[3] >= -0.1f && d.factor[3] <= 0.1f));
  }
  for (const auto& [fn, count] : first) CHECK(std::abs(count - 1000) < 4 * std::sqrt(750.0));
  std::vector<float> a(in.data.size()), b(in.data.size());
  cj->apply(in.data.data(), in.shape, a.data(), 5);
  detail::color_jitter_apply(in.data.data(), in.shape, detail::color_jitter_draw(r, 5), b.data());
  CHECK(a == b);
}

TEST_CASE("augmentation: bad arguments are errors naming them") {
  const Image in = input("rgb");
  std::vector<float> out(in.data.size());
  CHECK(mentions(error_of([&] { parse_interpolation("lanczos"); }),
                 "'lanczos' is not one of nearest"));
  CHECK(mentions(error_of([&] { auto_augment_by_name("augmix"); }),
                 "'augmix' is not one of ta_wide"));
  CHECK(mentions(error_of([&] { trivial_augment_wide(31, Interpolation::bicubic); }),
                 "bicubic is not available"));
  CHECK(mentions(error_of([&] { rand_augment(2, 31, 31); }),
                 "magnitude 31 must be in [0, num_magnitude_bins)"));
  CHECK(mentions(error_of([&] { rand_augment(-1); }), "num_ops -1"));
  CHECK(mentions(error_of([&] { color_jitter(-0.1f); }), "brightness -0.1 must be >= 0"));
  CHECK(mentions(error_of([&] { color_jitter(0, 0, 0, 0.6f); }), "hue 0.6 must be in [0, 0.5]"));
  CHECK(mentions(error_of([&] {
                   trivial_augment_wide()->output_shape(Shape{4, 8, 8});
                 }),
                 "1 or 3 channels, got [4, 8, 8]"));
  CHECK(mentions(error_of([&] {
                   color_jitter(0.2f)->output_shape(Shape{2, 8, 8});
                 }),
                 "1 or 3 channels"));
  CHECK(mentions(error_of([&] {
                   auto_augment(AutoAugmentPolicy::imagenet, Interpolation::nearest, {0.1f, 0.2f})
                       ->output_shape(in.shape);
                 }),
                 "2 fill values for images with 3 channels"));
  CHECK(
      mentions(error_of([&] { F::adjust_brightness(in.data.data(), in.shape, -1.0, out.data()); }),
               "adjust_brightness: factor -1 must be >= 0"));
  CHECK(mentions(error_of([&] { F::adjust_hue(in.data.data(), in.shape, 0.7, out.data()); }),
                 "adjust_hue: factor 0.7 is not in [-0.5, 0.5]"));
  CHECK(mentions(error_of([&] { F::posterize(in.data.data(), in.shape, 9, out.data()); }),
                 "posterize: bits 9 outside [0, 8]"));
  CHECK(mentions(error_of([&] { F::solarize(in.data.data(), in.shape, 1.5f, out.data()); }),
                 "solarize: threshold 1.5"));
  CHECK(mentions(error_of([&] {
                   F::adjust_contrast(in.data.data(), Shape{2, 23, 29}, 1.0, out.data());
                 }),
                 "adjust_contrast: takes 1 or 3 channels, got 2"));
  CHECK(mentions(error_of([&] {
                   F::rotate(in.data.data(), in.shape, 10.0, Interpolation::bicubic, {},
                             out.data());
                 }),
                 "rotate: interpolation bicubic"));
  CHECK(mentions(
      error_of([&] {
        F::rotate(in.data.data(), in.shape, 10.0, Interpolation::nearest, {1, 2}, out.data());
      }),
      "rotate: 2 fill values for an image with 3 channels"));
}

TEST_CASE("skip_bad_samples: a truncated image is replaced by the next and reported") {
  TempDir d("cohort_skip_bad");
  const std::string root = d.file("root");
  const std::string images = std::string(COHORT_GOLDEN_DIR) + "/images";
  const auto put = [&](const std::string& name, const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    fs::copy_file(images + "/" + name, to);
  };
  put("rgb.png", root + "/a/1.png");
  put("truncated.jpg", root + "/a/2.jpg");  // index 1
  put("gray.jpg", root + "/b/3.jpg");       // index 2
  put("rgb.jpg", root + "/b/4.jpg");
  const auto ds = load_image_folder(root);
  REQUIRE(ds->size() == 4);
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 4;
  // Off: the error names the file.
  {
    DataLoader l(ds, o, {center_crop(8, 8)}, host);
    Batch b;
    CHECK(mentions(error_of([&] { l.next(b); }), "2.jpg"));
  }
  // On: row 1 holds sample 2's image and label; the failure is kept for the epoch's report.
  for (int workers : {0, 2}) {
    CAPTURE(workers);
    o.skip_bad_samples = true;
    o.num_workers = workers;
    DataLoader l(ds, o, {center_crop(8, 8)}, host);
    Batch b;
    REQUIRE(l.next(b));
    const auto px = b.images.to_vector<float>();
    CHECK(b.labels.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 1, 1});
    CHECK(std::equal(px.begin() + 192, px.begin() + 384, px.begin() + 384));  // rows 1 and 2
    Batch none;
    CHECK_FALSE(l.next(none));
    const std::vector<BadSample> bad = l.bad_samples();
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].index == 1);
    CHECK(bad[0].for_sample == 1);
    CHECK(mentions(bad[0].error, "2.jpg"));
    // The prefetch thread reads epoch 1's first batch (the bad file again) right away; that is
    // not yet the caller's, so the new epoch starts empty (CI once saw the read-ahead's record).
    l.set_epoch(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the read-ahead happen
    CHECK(l.bad_samples().empty());
    REQUIRE(l.next(b));
    REQUIRE(l.bad_samples().size() == 1);
    CHECK(l.bad_samples()[0].index == 1);
  }
  // Nothing reads: an error, not an endless search.
  const std::string root2 = d.file("bad_only");
  put("truncated.jpg", root2 + "/a/1.jpg");
  put("truncated.png", root2 + "/a/2.png");
  DataLoader l(load_image_folder(root2), o, {center_crop(8, 8)}, host);
  Batch b;
  CHECK(mentions(error_of([&] { l.next(b); }), "2 samples in a row"));
}
