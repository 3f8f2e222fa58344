// Hand-computed updates, independent of PyTorch: the numbers below follow from the update rules
// on paper (worked out in the comments), so they check the golden file's source as well as the
// code.
#include <cmath>

#include "cohort/core/optim_ops.hpp"
#include "cohort/devices.hpp"
#include "cohort/optim.hpp"
#include "optim/optim_test_util.hpp"

namespace {

using cohort::Device;
using cohort::ParameterPtr;
using cohort::Tensor;
namespace optim = cohort::optim;

ParameterPtr param(const std::vector<float>& v, Device& dev) {
  return cohort::make_parameter(
      Tensor::from_vector(v, cohort::Shape{static_cast<std::int64_t>(v.size())}, dev));
}

void set_grad(const ParameterPtr& p, const std::vector<float>& g) {
  p->grad.copy_from(Tensor::from_vector(g, p->value.shape(), cohort::host_device()));
}

// float results against exact values: a few float ulps.
void check_values(const ParameterPtr& p, const std::vector<double>& want) {
  const std::vector<float> got = p->value.to_vector<float>();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-6 * std::fabs(want[i]) + 1e-7);
  }
}

const std::vector<float> kP = {1.0f, -2.0f, 0.5f};
const std::vector<float> kG1 = {0.5f, -1.0f, 2.0f};
const std::vector<float> kG2 = {0.25f, 0.5f, -1.0f};

}  // namespace

TEST_SUITE("hand") {

TEST_CASE("SGD with momentum, two steps by hand") {
  for (Device* dev : optim_test::test_devices()) {
    CAPTURE(dev->name());
    auto p = param(kP, *dev);
    optim::SGDOptions o;
    o.lr = 0.1;
    o.momentum = 0.9;
    optim::SGD sgd({p}, o);
    // Step 1: the buffer starts as the gradient: buf = g1 = [0.5, -1, 2];
    // p = p - 0.1 buf = [0.95, -1.9, 0.3].
    set_grad(p, kG1);
    sgd.step();
    check_values(p, {0.95, -1.9, 0.3});
    // Step 2: buf = 0.9 [0.5, -1, 2] + [0.25, 0.5, -1] = [0.7, -0.4, 0.8];
    // p = [0.95 - 0.07, -1.9 + 0.04, 0.3 - 0.08] = [0.88, -1.86, 0.22].
    set_grad(p, kG2);
    sgd.step();
    check_values(p, {0.88, -1.86, 0.22});
  }
}

TEST_CASE("SGD variants, by hand") {
  Device& dev = cohort::host_device();
  SUBCASE("Nesterov, step 1: d = g + 0.9 buf = 1.9 g, p = p - 0.1 * 1.9 g") {
    auto p = param(kP, dev);
    optim::SGDOptions o;
    o.lr = 0.1;
    o.momentum = 0.9;
    o.nesterov = true;
    optim::SGD sgd({p}, o);
    set_grad(p, kG1);
    sgd.step();
    check_values(p, {1.0 - 0.095, -2.0 + 0.19, 0.5 - 0.38});
  }
  SUBCASE("dampening 0.5: the first step ignores it (torch), the second uses it") {
    auto p = param(kP, dev);
    optim::SGDOptions o;
    o.lr = 0.1;
    o.momentum = 0.9;
    o.dampening = 0.5;
    optim::SGD sgd({p}, o);
    set_grad(p, kG1);
    sgd.step();  // buf = g1, p = [0.95, -1.9, 0.3]
    check_values(p, {0.95, -1.9, 0.3});
    set_grad(p, kG2);
    sgd.step();  // buf = 0.9 g1 + 0.5 g2 = [0.575, -0.65, 1.3]
    check_values(p, {0.95 - 0.0575, -1.9 + 0.065, 0.3 - 0.13});
  }
  SUBCASE("weight decay 0.1: d = g + 0.1 p = [0.6, -1.2, 2.05]") {
    auto p = param(kP, dev);
    optim::SGDOptions o;
    o.lr = 0.1;
    o.weight_decay = 0.1;
    optim::SGD sgd({p}, o);
    set_grad(p, kG1);
    sgd.step();
    check_values(p, {0.94, -1.88, 0.295});
  }
  SUBCASE("maximize: p = p + lr g") {
    auto p = param(kP, dev);
    optim::SGDOptions o;
    o.lr = 0.1;
    o.maximize = true;
    optim::SGD sgd({p}, o);
    set_grad(p, kG1);
    sgd.step();
    check_values(p, {1.05, -2.1, 0.7});
  }
}

// Adam at step 1: m = (1 - b1) g and v = (1 - b2) g^2, and the bias corrections divide exactly
// those factors out, so the step is lr * g / (|g| + eps) whatever the betas. With a constant
// gradient this stays true at every step (m / (1 - b1^t) = g, v / (1 - b2^t) = g^2).
TEST_CASE("Adam step 1 (and a constant-gradient step 2) by hand") {
  const std::vector<float> g = {0.1f, -0.3f, 2.0f};
  auto adam_step = [&](double p, double gi, double lr) {
    return p - lr * gi / (std::fabs(gi) + 1e-8);
  };
  for (Device* dev : optim_test::test_devices()) {
    CAPTURE(dev->name());
    auto p = param(kP, *dev);
    optim::AdamOptions o;
    o.lr = 0.01;
    o.betas = {0.8, 0.95};
    optim::Adam adam({p}, o);
    set_grad(p, g);
    adam.step();
    std::vector<double> want(3);
    for (int i = 0; i < 3; ++i) want[i] = adam_step(kP[i], g[i], 0.01);
    check_values(p, want);
    set_grad(p, g);
    adam.step();
    for (int i = 0; i < 3; ++i) want[i] = adam_step(want[i], g[i], 0.01);
    check_values(p, want);
  }
}

TEST_CASE("Adam L2 weight decay and AdamW decoupled weight decay, step 1 by hand") {
  Device& dev = cohort::host_device();
  const std::vector<float> g = {0.1f, -0.3f, 2.0f};
  SUBCASE("Adam: the decay enters the gradient, g' = g + 0.1 p") {
    auto p = param(kP, dev);
    optim::AdamOptions o;
    o.lr = 0.01;
    o.weight_decay = 0.1;
    optim::Adam adam({p}, o);
    set_grad(p, g);
    adam.step();
    std::vector<double> want(3);
    for (int i = 0; i < 3; ++i) {
      const double gi = g[i] + 0.1 * kP[i];
      want[i] = kP[i] - 0.01 * gi / (std::fabs(gi) + 1e-8);
    }
    check_values(p, want);
  }
  SUBCASE("AdamW: p = p (1 - lr wd) - lr g / (|g| + eps)") {
    auto p = param(kP, dev);
    optim::AdamWOptions o;
    o.lr = 0.01;
    o.weight_decay = 0.1;
    optim::AdamW adamw({p}, o);
    set_grad(p, g);
    adamw.step();
    std::vector<double> want(3);
    for (int i = 0; i < 3; ++i)
      want[i] = kP[i] * (1.0 - 0.001) - 0.01 * g[i] / (std::fabs(g[i]) + 1e-8);
    check_values(p, want);
  }
}

TEST_CASE("Adadelta and RMSprop step 1 by hand") {
  Device& dev = cohort::host_device();
  SUBCASE("Adadelta (lr 1, rho 0.9, eps 1e-6): delta = sqrt(eps) / sqrt(0.1 g^2 + eps) g") {
    auto p = param(kP, dev);
    optim::Adadelta adadelta({p});
    set_grad(p, kG1);
    adadelta.step();
    std::vector<double> want(3);
    for (int i = 0; i < 3; ++i) {
      const double gi = kG1[i];
      want[i] = kP[i] - std::sqrt(1e-6) / std::sqrt(0.1 * gi * gi + 1e-6) * gi;
    }
    check_values(p, want);
  }
  SUBCASE("RMSprop (lr 0.01, alpha 0.99, eps 1e-8): p = p - lr g / (sqrt(0.01 g^2) + eps)") {
    auto p = param(kP, dev);
    optim::RMSprop rmsprop({p});
    set_grad(p, kG1);
    rmsprop.step();
    std::vector<double> want(3);
    for (int i = 0; i < 3; ++i) {
      const double gi = kG1[i];
      want[i] = kP[i] - 0.01 * gi / (std::sqrt(0.01 * gi * gi) + 1e-8);
    }
    check_values(p, want);
  }
}

TEST_CASE("schedulers by hand") {
  auto p = param({0.0f}, cohort::host_device());
  optim::SGDOptions o;
  o.lr = 0.1;
  optim::SGD sgd({p}, o);
  SUBCASE("StepLR(step_size 2, gamma 0.5): 0.1, 0.1, 0.05, 0.05, 0.025") {
    optim::StepLR s(sgd, 2, 0.5);
    std::vector<double> got = {sgd.lr()};
    for (int i = 0; i < 4; ++i) {
      s.step();
      got.push_back(sgd.lr());
    }
    const std::vector<double> want = {0.1, 0.1, 0.05, 0.05, 0.025};
    for (int i = 0; i < 5; ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-14));
  }
  SUBCASE("CosineAnnealingLR(T_max 2): 0.1, 0.05, 0, 0.05, 0.1 (period 2 T_max)") {
    optim::CosineAnnealingLR s(sgd, 2);
    std::vector<double> want = {0.1, 0.05, 0.0, 0.05, 0.1};
    CHECK(sgd.lr() == doctest::Approx(want[0]));
    for (int i = 1; i < 5; ++i) {
      s.step();
      CHECK(std::fabs(sgd.lr() - want[i]) < 1e-15);
    }
  }
  SUBCASE("LinearLR(0.5, 1, 2): 0.05, 0.075, 0.1, 0.1") {
    optim::LinearLR s(sgd, 0.5, 1.0, 2);
    const std::vector<double> want = {0.05, 0.075, 0.1, 0.1};
    for (int i = 0; i < 4; ++i) {
      if (i) s.step();
      CHECK(sgd.lr() == doctest::Approx(want[i]).epsilon(1e-14));
    }
    CHECK(*sgd.initial_lr(0) == 0.1);
  }
}

}  // TEST_SUITE

// Adadelta's subnormal flush (AdadeltaArgs::flush_subnormal_state): against the unflushed op,
// over 1200 steps with gradients that are 0 (a dead unit: the state decays through the subnormal
// range), tiny (|g| < 2^-63: g * g is subnormal) and ordinary, the parameters stay bit-identical;
// the flushed state holds no subnormal and differs from the unflushed one by less than FLT_MIN.
TEST_CASE("Adadelta's subnormal flush changes no parameter") {
  auto& dev = cohort::host_device();
  const std::int64_t n = 6;
  const std::vector<float> init = {1.0f, -2.0f, 0.5f, 3.0f, -1.0f, 0.25f};
  cohort::Tensor p[2], sq[2], acc[2];
  for (int f = 0; f < 2; ++f) {
    p[f] = cohort::Tensor::from_vector(init, cohort::Shape{n}, dev);
    sq[f] = cohort::Tensor::zeros(cohort::Shape{n}, cohort::DType::f32, dev);
    acc[f] = cohort::Tensor::zeros(cohort::Shape{n}, cohort::DType::f32, dev);
  }
  cohort::AdadeltaArgs a;
  std::size_t subnormal_seen = 0;
  for (int step = 0; step < 1200; ++step) {
    // elements: dead after step 10, tiny, ordinary, ordinary-then-dead, subnormal g, tiny-ish
    const float s = static_cast<float>(step % 7) - 3.0f;
    const std::vector<float> g = {step < 10 ? 0.1f * s : 0.0f, 1e-25f * s, 0.01f * s,
                                  step < 300 ? 1e-3f * s : 0.0f, 1e-40f * s, 3e-20f * s};
    const auto grad = cohort::Tensor::from_vector(g, cohort::Shape{n}, dev);
    for (int f = 0; f < 2; ++f) {
      a.flush_subnormal_state = f == 1;
      cohort::ops::adadelta_step(p[f], grad, sq[f], acc[f], a);
    }
    for (float v : sq[0].to_vector<float>()) subnormal_seen += std::fpclassify(v) == FP_SUBNORMAL;
    REQUIRE(p[0].to_vector<float>() == p[1].to_vector<float>());
  }
  CHECK(subnormal_seen > 100);  // the unflushed state does go subnormal: the case is exercised
  for (const auto* t : {&sq[1], &acc[1]})
    for (float v : t->to_vector<float>()) CHECK(std::fpclassify(v) != FP_SUBNORMAL);
  for (int k = 0; k < 2; ++k) {
    const auto u = (k ? acc[0] : sq[0]).to_vector<float>(),
               f = (k ? acc[1] : sq[1]).to_vector<float>();
    for (std::size_t i = 0; i < u.size(); ++i) CHECK(std::fabs(u[i] - f[i]) < 1.17549435e-38f);
  }
}
