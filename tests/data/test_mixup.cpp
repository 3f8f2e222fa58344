// MixUp, CutMix and cross-entropy with soft targets against torchvision and torch
// (tests/golden/mixup.json, made by tests/golden/make_mixup_golden.py with torchvision's own
// transforms, their draws pinned): images and targets to the bit for pinned lam, CutMix's box and
// adjusted lam exactly, the loss and its gradient to float rounding. The Beta draw by its
// moments; the DataLoader's mixed batches against its unmixed ones (the same bits for any number
// of workers); bad arguments named.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "../common/golden.hpp"
#include "../common/testing.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/data/transforms.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers/loss.hpp"

using namespace cohort::data;
using cohort::Shape;
using cohort::Tensor;
using cohort::testing::error_of;

namespace {

const nlohmann::json& golden() { return cohort::testing::golden_json("mixup.json"); }

using cohort::testing::mentions;

struct GoldenBatch {
  std::vector<float> x;
  std::vector<std::int64_t> labels;
  Shape shape;
  std::int64_t classes;
};

GoldenBatch batch() {
  const auto& b = golden().at("batch");
  return {b.at("x").get<std::vector<float>>(), b.at("labels").get<std::vector<std::int64_t>>(),
          Shape(b.at("x_shape").get<std::vector<std::int64_t>>()),
          b.at("num_classes").get<std::int64_t>()};
}

}  // namespace

TEST_CASE("MixUp and CutMix with pinned draws: torchvision's images and targets, bit for bit") {
  for (const auto& c : golden().at("mixup").at("cases")) {
    const double lam = c.at("lam");
    CAPTURE(lam);
    GoldenBatch g = batch();
    std::vector<float> targets(g.labels.size() * static_cast<std::size_t>(g.classes));
    detail::mixup_apply(g.x.data(), g.shape, g.labels.data(), g.classes, lam, targets.data());
    CHECK(g.x == c.at("images").get<std::vector<float>>());
    CHECK(targets == c.at("targets").get<std::vector<float>>());
  }
  const auto& cm = golden().at("cutmix");
  for (const auto& c : cm.at("cases")) {
    const double lam = c.at("lam");
    CAPTURE(lam);
    const auto box = detail::cutmix_box(cm.at("H"), cm.at("W"), lam, c.at("r_x"), c.at("r_y"));
    const auto want = c.at("box").get<std::vector<std::int64_t>>();
    CHECK(std::vector<std::int64_t>{box.x1, box.y1, box.x2, box.y2} == want);
    CHECK(box.lam_adjusted == c.at("lam_adjusted").get<double>());
    GoldenBatch g = batch();
    std::vector<float> targets(g.labels.size() * static_cast<std::size_t>(g.classes));
    detail::cutmix_apply(g.x.data(), g.shape, g.labels.data(), g.classes, box, targets.data());
    CHECK(g.x == c.at("images").get<std::vector<float>>());
    CHECK(targets == c.at("targets").get<std::vector<float>>());
  }
}

TEST_CASE("the Beta(alpha, alpha) draw has the distribution's moments") {
  for (const float alpha : {0.2f, 1.0f, 2.5f}) {
    CAPTURE(alpha);
    const int n = 40000;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
      const double v = detail::beta_draw(alpha, 0x1234ull + static_cast<std::uint64_t>(i) * 7919);
      REQUIRE(v >= 0.0);
      REQUIRE(v <= 1.0);
      sum += v;
      sq += v * v;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    const double want_var = 1.0 / (4.0 * (2.0 * alpha + 1.0));
    CHECK(std::abs(mean - 0.5) < 0.01);
    CHECK(std::abs(var - want_var) < 0.04 * want_var);
  }
}

TEST_CASE("cross-entropy with soft targets: torch's loss and gradient") {
  const auto& sce = golden().at("soft_cross_entropy");
  auto& host = cohort::host_device();
  const auto logits = sce.at("logits").get<std::vector<float>>();
  const Shape shape(sce.at("logits_shape").get<std::vector<std::int64_t>>());
  const auto soft = sce.at("soft_targets").get<std::vector<float>>();
  const auto hard = sce.at("hard_labels").get<std::vector<std::int64_t>>();
  for (const auto& c : sce.at("cases")) {
    const std::string name = c.at("name"), kind = c.at("target");
    CAPTURE(name);
    cohort::nn::CrossEntropyLoss loss(c.at("reduction") == "mean" ? cohort::nn::Reduction::mean
                                                                  : cohort::nn::Reduction::sum,
                                      c.at("label_smoothing").get<double>());
    Tensor z = Tensor::from_vector(logits, shape, host);
    Tensor t;
    if (kind == "hard") {
      t = Tensor::from_vector(hard, Shape{shape[0]}, host);
    } else if (kind == "soft") {
      t = Tensor::from_vector(soft, shape, host);
    } else {  // one-hot probabilities: must give the hard labels' loss
      std::vector<float> oh(static_cast<std::size_t>(shape.numel()), 0.0f);
      for (std::size_t r = 0; r < hard.size(); ++r)
        oh[r * static_cast<std::size_t>(shape[1]) + static_cast<std::size_t>(hard[r])] = 1.0f;
      t = Tensor::from_vector(oh, shape, host);
    }
    loss.forward(z, t);
    CHECK(loss.value() == doctest::Approx(c.at("value").get<double>()).epsilon(2e-6));
    const auto grad = loss.backward().to_vector<float>();
    const auto want = c.at("grad").get<std::vector<float>>();
    REQUIRE(grad.size() == want.size());
    for (std::size_t i = 0; i < grad.size(); ++i) CHECK(grad[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(1e-6));
  }
  cohort::nn::CrossEntropyLoss loss;
  Tensor z = Tensor::from_vector(logits, shape, host);
  Tensor wrong = Tensor::from_vector(std::vector<float>(10, 0.1f), Shape{2, 5}, host);
  CHECK(mentions(
      error_of([&] { loss.forward(z, wrong); }),
      "soft targets (f32) must have the logits' shape [N, C], got [2, 5] for logits [4, 5]"));
}

TEST_CASE("DataLoader with MixUp or CutMix: mixed rows of its own batches, soft targets") {
  auto& host = cohort::host_device();
  auto ds = std::make_shared<SyntheticDataset>(40, Shape{3, 6, 5}, 7, 3);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 11;
  DataLoader plain(ds, o, {random_horizontal_flip()}, host);
  std::vector<Batch> unmixed;
  for (Batch b; plain.next(b);) unmixed.push_back(b);

  SUBCASE("MixUp: row r = lam row r + (1 - lam) row r-1, lam read off the targets") {
    o.batch_transform = mixup(7, 0.4f);
    std::vector<std::vector<float>> runs;
    for (int workers : {0, 2}) {
      o.num_workers = workers;
      DataLoader l(ds, o, {random_horizontal_flip()}, host);
      std::vector<float> all;
      std::size_t k = 0;
      for (Batch b; l.next(b); ++k) {
        REQUIRE(b.targets.defined());
        const std::int64_t rows = b.images.dim(0);
        CHECK(b.targets.shape() == Shape{rows, 7});
        const auto t = b.targets.to_vector<float>();
        const auto y = b.labels.to_vector<std::int64_t>();
        const auto x0 = unmixed[k].images.to_vector<float>();
        const auto x = b.images.to_vector<float>();
        CHECK(y == unmixed[k].labels.to_vector<std::int64_t>());
        // lam from row 0's targets: its own class gets lam (plus 1 - lam if row -1 shares it).
        const std::int64_t own = y[0], other = y[static_cast<std::size_t>(rows - 1)];
        const float lam = own == other ? 0.5f : t[static_cast<std::size_t>(own)];
        if (own != other) {
          const std::int64_t per = x.size() / rows;
          double worst = 0;
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t i = 0; i < per; ++i) {
              const float want = lam * x0[r * per + i] +
                                 (1 - lam) * x0[((r + rows - 1) % rows) * per + i];
              worst = std::max(worst, static_cast<double>(std::abs(x[r * per + i] - want)));
            }
          CHECK(worst < 1e-6);
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (int c = 0; c < 7; ++c) s += t[static_cast<std::size_t>(r * 7 + c)];
          CHECK(s == doctest::Approx(1.0).epsilon(1e-6));
        }
        all.insert(all.end(), x.begin(), x.end());
        all.insert(all.end(), t.begin(), t.end());
      }
      runs.push_back(all);
    }
    CHECK(runs[0] == runs[1]);
  }
  SUBCASE("CutMix, or either, with one draw per batch: targets sum to 1, images partly pasted") {
    o.batch_transform = mixup_or_cutmix(7, 0.2f, 1.0f);
    DataLoader l(ds, o, {random_horizontal_flip()}, host);
    std::size_t k = 0;
    for (Batch b; l.next(b); ++k) {
      const auto t = b.targets.to_vector<float>();
      double s = 0;
      for (float v : t) s += v;
      CHECK(s == doctest::Approx(static_cast<double>(b.images.dim(0))).epsilon(1e-5));
    }
    CHECK(k == unmixed.size());
  }
  CHECK(mentions(error_of([] { mixup(0); }), "mixup: num_classes 0"));
  CHECK(mentions(error_of([] { cutmix(5, 0.0f); }), "cutmix: alpha 0 must be > 0"));
  CHECK(mentions(error_of([] { mixup_or_cutmix(5, 0.0f, 0.0f); }), "not both 0"));
  o.batch_transform = mixup(5, 1.0f);
  CHECK(mentions(error_of([&] { DataLoader bad(ds, o, {}, host); }),
                 "has 5 classes, fewer than the 7 of"));
  std::vector<float> img(2 * 3 * 2 * 2, 0.0f), tg(2 * 3);
  const std::int64_t labels[2] = {1, 3};
  CHECK(mentions(error_of([&] {
                   detail::mixup_apply(img.data(), Shape{2, 3, 2, 2}, labels, 3, 0.5, tg.data());
                 }),
                 "mixup: row 1 has label 3, not a class index in [0, 3)"));
}
