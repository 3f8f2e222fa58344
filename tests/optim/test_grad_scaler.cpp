// GradScaler against torch.amp.GradScaler (tests/golden/grad_scaler.json, written by
// tests/golden/make_grad_scaler_golden.py with the peers' PyTorch): for each pattern of finite, inf
// and NaN steps, the scale and growth count after every update, which steps were skipped, the
// unscaled gradients and the parameter after every step, bit for bit. Also the state round trip,
// the disabled scaler, and the misuses torch refuses.
#include <cmath>
#include <limits>

#include "cohort/optim.hpp"
#include "common/golden.hpp"
#include "optim/optim_test_util.hpp"

namespace {

namespace optim = cohort::optim;
using cohort::Tensor;

const cohort::testing::GoldenFile& golden() {
  static const cohort::testing::GoldenFile f(cohort::testing::golden_dir() + "/grad_scaler.json");
  return f;
}

// The gradient torch's backward of scale * sum(p * w) gives, then the pattern's inf or NaN.
void scaled_grad(cohort::Parameter& p, float scale, int kind) {
  std::vector<float> g = {scale * 0.5f, scale * 0.25f, scale * -1.0f};
  if (kind == 1) g[1] = std::numeric_limits<float>::infinity();
  if (kind == 2) g[2] = std::numeric_limits<float>::quiet_NaN();
  p.grad = Tensor::from_vector(g, {3}, p.value.device());
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

}  // namespace

TEST_SUITE("grad_scaler") {
  TEST_CASE("the scale sequence, skipped steps and unscaled gradients are torch's") {
    for (cohort::Device* dev : optim_test::test_devices()) {
      for (const std::string& c : golden().cases()) {
        CAPTURE(c);
        CAPTURE(dev->name());
        const auto& cfg = golden().config(c);
        optim::GradScalerOptions o;
        o.init_scale = cfg["init_scale"].get<double>();
        o.growth_factor = cfg["growth_factor"].get<double>();
        o.backoff_factor = cfg["backoff_factor"].get<double>();
        o.growth_interval = cfg["growth_interval"].get<std::int64_t>();
        optim::GradScaler scaler(o);
        auto p = cohort::make_parameter(Tensor::from_vector<float>({1, -2, 3}, {3}, *dev));
        optim::SGDOptions so;
        so.lr = 0.1;
        optim::SGD sgd({p}, so);
        const auto scale = golden().tensor(c, "scale").data;
        const auto tracker = golden().tensor(c, "growth_tracker").data;
        const auto stepped = golden().tensor(c, "stepped").data;
        const auto unscaled = golden().tensor(c, "unscaled").data;
        const auto param = golden().tensor(c, "param").data;
        const auto pattern = cfg["pattern"].get<std::vector<int>>();
        std::int64_t skipped = 0;
        for (std::size_t s = 0; s < pattern.size(); ++s) {
          CAPTURE(s);
          scaled_grad(*p, scaler.scale(), pattern[s]);
          scaler.unscale(sgd);  // before clipping would go
          const auto g = p->grad.to_vector<float>();
          for (std::size_t i = 0; i < 3; ++i) CHECK(same_float(g[i], unscaled[3 * s + i]));
          const bool did = scaler.step(sgd);
          CHECK(did == (stepped[s] == 1.0f));
          CHECK(scaler.found_inf() == (pattern[s] != 0));
          scaler.update();
          skipped += did ? 0 : 1;
          CHECK(scaler.scale() == scale[s]);
          CHECK(scaler.growth_tracker() == static_cast<std::int64_t>(tracker[s]));
          const auto w = p->value.to_vector<float>();
          for (std::size_t i = 0; i < 3; ++i) CHECK(w[i] == param[3 * s + i]);
        }
        CHECK(scaler.skipped_steps() == skipped);
      }
    }
  }

  TEST_CASE("state round trip mid-sequence, with torch's keys") {
    optim::GradScalerOptions o;
    o.init_scale = 1024;
    o.growth_interval = 3;
    optim::GradScaler a(o);
    auto p = cohort::make_parameter(Tensor::from_vector<float>({1, -2, 3}, {3}, cohort::host_device()));
    optim::SGDOptions so;
    so.lr = 0.1;
    optim::SGD sgd({p}, so);
    for (int k : {0, 0, 1, 0, 0}) {
      scaled_grad(*p, a.scale(), k);
      a.step(sgd);
      a.update();
    }
    const optim::StateDict s = a.state();
    CHECK(s.kind == "GradScaler");
    CHECK(s.scalars.at("scale") == 512.0);
    CHECK(s.scalars.at("_growth_tracker") == 2.0);
    CHECK(s.scalars.at("growth_interval") == 3.0);
    optim::GradScaler b;  // other options: load_state brings them
    b.load_state(s);
    for (optim::GradScaler* g : {&a, &b}) {
      scaled_grad(*p, g->scale(), 0);
      g->step(sgd);
      g->update();
    }
    CHECK(a.scale() == 1024.0f);  // the third good step in a row grows it
    CHECK(b.scale() == a.scale());
    CHECK(b.growth_tracker() == a.growth_tracker());
    optim::StateDict bad = s;
    bad.scalars["_growth_tracker"] = 3;
    CHECK_ERROR_MENTIONS("_growth_tracker 3 outside [0, 3)", [&] { b.load_state(bad); });
    bad = s;
    bad.kind = "SGD";
    CHECK_ERROR_MENTIONS("state of a SGD", [&] { b.load_state(bad); });
    CHECK(b.scale() == a.scale());  // a refused state changes nothing
  }

  TEST_CASE("disabled: scale 1, every step taken, gradients untouched") {
    optim::GradScalerOptions o;
    o.enabled = false;
    optim::GradScaler g(o);
    CHECK(g.scale() == 1.0f);
    auto p = cohort::make_parameter(Tensor::from_vector<float>({1, -2, 3}, {3}, cohort::host_device()));
    optim::SGDOptions so;
    so.lr = 0.1;
    optim::SGD sgd({p}, so);
    scaled_grad(*p, 1.0f, 0);
    g.unscale(sgd);
    CHECK(p->grad.to_vector<float>() == std::vector<float>{0.5f, 0.25f, -1.0f});
    CHECK(g.step(sgd));
    g.update();
    CHECK(p->value.to_vector<float>() == std::vector<float>{0.95f, -2.025f, 3.1f});
  }

  TEST_CASE("misuse torch refuses, and bad options") {
    optim::GradScaler g;
    auto p = cohort::make_parameter(Tensor::from_vector<float>({1, -2, 3}, {3}, cohort::host_device()));
    optim::SGDOptions so;
    so.lr = 0.1;
    optim::SGD sgd({p}, so);
    CHECK_ERROR_MENTIONS("update() without unscale() or step()", [&] { g.update(); });
    scaled_grad(*p, g.scale(), 0);
    g.unscale(sgd);
    CHECK_ERROR_MENTIONS("unscale() has already been called", [&] { g.unscale(sgd); });
    optim::GradScalerOptions o;
    o.init_scale = 0;
    CHECK_ERROR_MENTIONS("init_scale must be finite and > 0", [&] { optim::GradScaler x(o); });
    o = {};
    o.growth_factor = 1;
    CHECK_ERROR_MENTIONS("growth_factor must be > 1", [&] { optim::GradScaler x(o); });
    o = {};
    o.backoff_factor = 1;
    CHECK_ERROR_MENTIONS("backoff_factor must be in (0, 1)", [&] { optim::GradScaler x(o); });
    o = {};
    o.growth_interval = 0;
    CHECK_ERROR_MENTIONS("growth_interval must be >= 1", [&] { optim::GradScaler x(o); });
    o = {};
    o.init_scale = 1e39;
    CHECK_ERROR_MENTIONS("beyond float32's range", [&] { optim::GradScaler x(o); });
  }
}
