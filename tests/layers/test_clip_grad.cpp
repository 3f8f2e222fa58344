// Gradient clipping and label smoothing against PyTorch 1.13 (tests/golden/recipe.json, written by
// tests/golden/make_recipe_golden.py), a hand-computed case each, and their bad inputs.
//
// Tolerance: |got - want| <= 1e-5 |want| + 1e-6 for gradients and losses; the total norm 1e-6
// relative (cohort sums in double, torch in float: both are within a few float ulps of the truth).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers/clip_grad.hpp"
#include "cohort/layers/loss.hpp"
#include "golden.hpp"
#include "testing.hpp"

namespace nn = cohort::nn;
using cohort::ParameterPtr;
using cohort::Shape;
using cohort::Tensor;
using cohort::testing::error_of;
using cohort::testing::GoldenFile;

namespace {

const GoldenFile& golden() {
  static const GoldenFile g(cohort::testing::golden_dir() + "/recipe.json");
  return g;
}

bool close(double got, double want, double rel = 1e-5, double abs = 1e-6) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(got - want) <= rel * std::fabs(want) + abs;
}

void check_tensor(const Tensor& got, const cohort::testing::GoldenTensor& want,
                  const std::string& what) {
  REQUIRE(got.numel() == static_cast<std::int64_t>(want.data.size()));
  const std::vector<float> g = got.to_vector<float>();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!close(g[i], want.data[i]) && bad++ == 0) first = i;
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << g.size() << " values differ, first at "
                                << first << ": " << g[first] << " vs torch " << want.data[first]);
}

// The case's gradients as parameters (values zero, gradients torch's inputs) on the host.
std::vector<ParameterPtr> params_of(const std::string& c) {
  std::vector<ParameterPtr> ps;
  for (int j = 0; golden().has_tensor(c, "grad" + std::to_string(j) + ".in"); ++j) {
    Tensor g = golden().load(c, "grad" + std::to_string(j) + ".in", cohort::host_device());
    ParameterPtr p = cohort::make_parameter(Tensor::zeros(g.shape(), cohort::DType::f32,
                                                          cohort::host_device()));
    p->grad.copy_from(g);
    ps.push_back(p);
  }
  return ps;
}

}  // namespace

TEST_SUITE("recipe") {
TEST_CASE("clip_grad_norm equals torch.nn.utils.clip_grad_norm_ (p = 2, inf, 1, 3, NaN)") {
  for (const std::string c : {"clip_norm.l2_clipped", "clip_norm.l2_unclipped", "clip_norm.inf",
                              "clip_norm.l1", "clip_norm.l3", "clip_norm.nan",
                              "clip_norm.inf_nan"}) {
    CAPTURE(c);
    const auto& cfg = golden().config(c);
    const double p = cfg["norm_type"].is_string() ? std::numeric_limits<double>::infinity()
                                                  : cfg["norm_type"].get<double>();
    auto ps = params_of(c);
    const double total = nn::clip_grad_norm(ps, cfg["max_norm"].get<double>(), p);
    const double want = golden().tensor(c, "total_norm").data[0];
    CHECK_MESSAGE(close(total, want, 1e-6, 0), "total norm " << total << " vs torch " << want);
    for (std::size_t j = 0; j < ps.size(); ++j)
      check_tensor(ps[j]->grad, golden().tensor(c, "grad" + std::to_string(j) + ".out"),
                   c + " grad" + std::to_string(j));
  }
}

TEST_CASE("clip_grad_norm by hand: [3, 4] has norm 5; coefficient 1 / (5 + 1e-6) in f32") {
  auto& dev = cohort::host_device();
  ParameterPtr a = cohort::make_parameter(Tensor::zeros(Shape{2}, cohort::DType::f32, dev));
  a->grad = Tensor::from_vector(std::vector<float>{3.0f, -4.0f}, Shape{2}, dev);
  ParameterPtr frozen = cohort::make_parameter(Tensor::zeros(Shape{1}, cohort::DType::f32, dev));
  frozen->grad = Tensor::from_vector(std::vector<float>{1e6f}, Shape{1}, dev);
  frozen->requires_grad = false;  // skipped, as torch skips grad None
  CHECK(nn::clip_grad_norm({a, frozen}, 1.0) == doctest::Approx(5.0).epsilon(1e-12));
  const float coef = (1.0f / (5.0f + 1e-6f)) * 1.0f;
  CHECK(a->grad.to_vector<float>() == std::vector<float>{coef * 3.0f, coef * -4.0f});
  CHECK(frozen->grad.to_vector<float>() == std::vector<float>{1e6f});
  // Below max_norm nothing changes, bit for bit; no gradient at all gives norm 0.
  CHECK(nn::clip_grad_norm({a}, 10.0) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(a->grad.to_vector<float>() == std::vector<float>{coef * 3.0f, coef * -4.0f});
  CHECK(nn::clip_grad_norm({}, 1.0) == 0.0);
  CHECK(nn::clip_grad_norm({frozen}, 1.0) == 0.0);
}

TEST_CASE("clip_grad_norm error_if_nonfinite names the parameter and changes nothing") {
  auto ps = params_of("clip_norm.nan");
  std::vector<std::vector<float>> before;
  for (const auto& p : ps) before.push_back(p->grad.to_vector<float>());
  const std::string e = error_of([&] { nn::clip_grad_norm(ps, 1.0, 2.0, true); });
  CHECK(e.find("total norm of order 2") != std::string::npos);
  CHECK(e.find("parameter 1's gradient [5] with norm nan") != std::string::npos);
  for (std::size_t j = 0; j < ps.size(); ++j) {
    const auto now = ps[j]->grad.to_vector<float>();
    for (std::size_t i = 0; i < now.size(); ++i)
      CHECK((now[i] == before[j][i] || (std::isnan(now[i]) && std::isnan(before[j][i]))));
  }
}

TEST_CASE("clip_grad_norm and clip_grad_value refuse bad arguments") {
  auto& dev = cohort::host_device();
  ParameterPtr a = cohort::make_parameter(Tensor::zeros(Shape{2}, cohort::DType::f32, dev));
  CHECK(error_of([&] { nn::clip_grad_norm({a}, -1.0); }).find("max_norm must be finite and >= 0, "
                                                             "got -1") != std::string::npos);
  CHECK(error_of([&] { nn::clip_grad_norm({a}, std::nan("")); }).find("max_norm") !=
        std::string::npos);
  CHECK(error_of([&] { nn::clip_grad_norm({a}, 1.0, 0.0); }).find("norm_type must be > 0") !=
        std::string::npos);
  CHECK(error_of([&] { nn::clip_grad_norm({a, nullptr}, 1.0); }).find("parameter 1 is null") !=
        std::string::npos);
  ParameterPtr h = cohort::make_parameter(Tensor::zeros(Shape{2}, cohort::DType::f32, dev));
  h->grad = Tensor::zeros(Shape{2}, cohort::DType::bf16, dev);
  CHECK(error_of([&] { nn::clip_grad_norm({a, h}, 1.0); })
            .find("parameter 1's gradient is bf16, expected f32") != std::string::npos);
  CHECK(error_of([&] { nn::clip_grad_value({a}, -0.5); })
            .find("clip_value must be finite and >= 0, got -0.5") != std::string::npos);
  CHECK(error_of([&] { cohort::ops::clamp(a->grad, 1.0f, -1.0f, a->grad); })
            .find("clamp: needs lo <= hi") != std::string::npos);
}

TEST_CASE("clip_grad_value equals torch.nn.utils.clip_grad_value_ (NaN stays NaN)") {
  auto ps = params_of("clip_value");
  nn::clip_grad_value(ps, golden().config("clip_value")["clip_value"].get<double>());
  for (std::size_t j = 0; j < ps.size(); ++j)
    check_tensor(ps[j]->grad, golden().tensor("clip_value", "grad" + std::to_string(j) + ".out"),
                 "clip_value grad" + std::to_string(j));
}

TEST_CASE("CrossEntropyLoss label_smoothing equals torch (0.1, 0.3; mean and sum)") {
  auto& dev = cohort::host_device();
  for (const std::string c : {"ce_smoothing.0.1.mean", "ce_smoothing.0.1.sum",
                              "ce_smoothing.0.3.mean", "ce_smoothing.0.3.sum"}) {
    CAPTURE(c);
    const auto& cfg = golden().config(c);
    const nn::Reduction r = cfg["reduction"] == "mean" ? nn::Reduction::mean : nn::Reduction::sum;
    nn::CrossEntropyLoss loss(r, cfg["label_smoothing"].get<double>());
    const Tensor logits = golden().load(c, "logits", dev);
    std::vector<std::int64_t> t;
    for (const float v : golden().tensor(c, "target").data) t.push_back(static_cast<std::int64_t>(v));
    const Tensor target = Tensor::from_vector(t, Shape{static_cast<std::int64_t>(t.size())}, dev);
    const Tensor l = loss.forward(logits, target);
    CHECK(close(l.item(), golden().tensor(c, "loss").data[0]));
    check_tensor(loss.backward(), golden().tensor(c, "grad"), c + " grad");
  }
}

TEST_CASE("CrossEntropyLoss label smoothing by hand, and 0 is the plain loss bit for bit") {
  auto& dev = cohort::host_device();
  // Two classes, logits equal: logp = log(1/2) for both, so every smoothing gives log 2.
  const Tensor logits = Tensor::zeros(Shape{1, 2}, cohort::DType::f32, dev);
  const Tensor target = Tensor::from_vector(std::vector<std::int64_t>{1}, Shape{1}, dev);
  nn::CrossEntropyLoss smooth(nn::Reduction::mean, 0.2);
  CHECK(smooth.forward(logits, target).item() == doctest::Approx(std::log(2.0)).epsilon(1e-6));
  // Gradient: softmax - q = 0.5 - (0.8 + 0.1) at the target, 0.5 - 0.1 elsewhere.
  const auto g = smooth.backward().to_vector<float>();
  CHECK(g[0] == doctest::Approx(0.4).epsilon(1e-6));
  CHECK(g[1] == doctest::Approx(-0.4).epsilon(1e-6));
  const Tensor x = Tensor::from_vector(std::vector<float>{0.3f, -1.2f, 2.5f, 0.7f, 0.1f, -0.4f},
                                       Shape{2, 3}, dev);
  const Tensor y = Tensor::from_vector(std::vector<std::int64_t>{2, 0}, Shape{2}, dev);
  nn::CrossEntropyLoss plain, zero(nn::Reduction::mean, 0.0);
  CHECK(plain.forward(x, y).item() == zero.forward(x, y).item());
  CHECK(plain.backward().to_vector<float>() == zero.backward().to_vector<float>());
  CHECK(error_of([] { nn::CrossEntropyLoss(nn::Reduction::mean, 1.5); })
            .find("label_smoothing must be in [0, 1], got 1.5") != std::string::npos);
  CHECK(error_of([] { nn::CrossEntropyLoss(nn::Reduction::mean, -0.1); })
            .find("label_smoothing") != std::string::npos);
}
}
