// torchvision's reference schedule by its flags (reference_schedule.hpp), the lr per epoch by hand:
// 5 constant warm-up epochs at 0.01 x lr then cosine annealing over the other 15 to lr_min;
// linear warm-up then StepLR; ExponentialLR; and the flags' errors.
#include <doctest/doctest.h>

#include <cmath>

#include "../common/testing.hpp"
#include "cohort/devices.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/reference_schedule.hpp"

namespace train = cohort::train;

namespace {
std::vector<double> lrs(const train::ReferenceSchedule& s, double base) {
  auto p = std::make_shared<cohort::Parameter>();
  p->value = cohort::Tensor::zeros(cohort::Shape{1}, cohort::DType::f32, cohort::host_device());
  cohort::optim::SGDOptions o;
  o.lr = base;
  cohort::optim::SGD opt({p}, o);
  auto sched = train::reference_lr_scheduler(opt, s);
  std::vector<double> out;
  for (std::int64_t e = 0; e < s.epochs; ++e) {
    out.push_back(opt.lr());
    sched->step();
  }
  return out;
}
}  // namespace

TEST_CASE("reference schedule: torchvision's warm-up and main schedules, lr per epoch by hand") {
  const double pi = 3.14159265358979323846;
  train::ReferenceSchedule s;
  s.lr_scheduler = "cosineannealinglr";
  s.epochs = 20;
  s.lr_warmup_epochs = 5;
  s.lr_min = 1e-4;
  const auto c = lrs(s, 0.5);
  for (int e = 0; e < 5; ++e) CHECK(c[e] == doctest::Approx(0.5 * 0.01));
  for (int e = 5; e < 20; ++e)
    CHECK(c[e] == doctest::Approx(1e-4 + (0.5 - 1e-4) * (1 + std::cos(pi * (e - 5) / 15.0)) / 2));
  s = {};
  s.epochs = 10;
  s.lr_step_size = 3;
  s.lr_gamma = 0.5;
  s.lr_warmup_epochs = 2;
  s.lr_warmup_method = "linear";
  s.lr_warmup_decay = 0.1;
  const auto l = lrs(s, 1.0);
  CHECK(l[0] == doctest::Approx(0.1));
  CHECK(l[1] == doctest::Approx(0.55));  // 0.1 + 0.9 x 1/2
  for (int e = 2; e < 10; ++e) CHECK(l[e] == doctest::Approx(std::pow(0.5, (e - 2) / 3)));
  s = {};
  s.lr_scheduler = "exponentiallr";
  s.epochs = 4;
  s.lr_gamma = 0.9;
  const auto x = lrs(s, 2.0);
  for (int e = 0; e < 4; ++e) CHECK(x[e] == doctest::Approx(2.0 * std::pow(0.9, e)));
  CHECK(train::describe(s) == "exponentiallr (gamma 0.9) (per epoch)");
}

TEST_CASE("reference schedule: bad flags are named") {
  const auto err = [](train::ReferenceSchedule s) {
    return cohort::testing::error_of([&] { lrs(s, 0.1); });
  };
  train::ReferenceSchedule s;
  s.lr_scheduler = "onecycle";
  CHECK(cohort::testing::mentions(err(s), "--lr-scheduler 'onecycle' is not one of steplr"));
  s = {};
  s.epochs = 5;
  s.lr_warmup_epochs = 5;
  CHECK(cohort::testing::mentions(err(s), "--lr-warmup-epochs 5 leaves nothing of the run's 5 epochs"));
  s = {};
  s.lr_warmup_epochs = 1;
  s.lr_warmup_method = "cosine";
  CHECK(cohort::testing::mentions(err(s), "--lr-warmup-method 'cosine' is not one of constant, linear"));
  s = {};
  s.lr_step_size = 0;
  CHECK(cohort::testing::mentions(err(s), "--lr-step-size 0 must be >= 1"));
}
