// The exponential moving average of the weights against torch's AveragedModel as torchvision's
// reference script uses it (tests/golden/ema.json from tests/golden/make_ema_golden.py): five
// updates with a reset after the second, every parameter and buffer (num_batches_tracked
// truncated) to the bit. The Trainer's cadence (an update every ema_steps steps of an epoch, reset
// during the warm-up epochs), the evaluation of the averaged weights beside the model (equal to
// evaluating a model loaded with them, the model's own weights untouched), the decay adjustment,
// the averages in checkpoints (a resumed run's equal an uninterrupted run's bits) and the errors
// (ema_steps 0, another model, a checkpoint without averages).
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "../common/golden.hpp"
#include "../common/testing.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/ema.hpp"
#include "cohort/train/trainer.hpp"

namespace nn = cohort::nn;
namespace data = cohort::data;
namespace train = cohort::train;
using cohort::Shape;
using cohort::Tensor;
using cohort::testing::error_of;

namespace {

nn::ModulePtr golden_model(cohort::Device& dev) {
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"0", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 2, 3), dev)},
      {"1", nn::make<nn::BatchNorm2d>(2, dev)},
      {"2", nn::make<nn::Flatten>()},
      {"3", nn::make<nn::Linear>(8, 3, dev)}});
}

// make_ema_golden.py's formula: entry t, element i: sin(0.37 i + t + 1.3 k); the counter 3k + 1.
void set_state(nn::Module& m, int k) {
  int t = 0;
  for (const auto& e : m.state_dict()) {
    Tensor v = e.tensor;
    if (v.dtype() == cohort::DType::i64) {
      v.copy_from(Tensor::from_vector(std::vector<std::int64_t>{3 * k + 1}, v.shape(), v.device()));
    } else {
      std::vector<float> x(static_cast<std::size_t>(v.numel()));
      for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + t + 1.3 * k));
      v.copy_from(Tensor::from_vector(x, v.shape(), v.device()));
    }
    ++t;
  }
  m.notify_state_loaded();
}

nn::ModulePtr small_net(cohort::Device& dev) {
  nn::manual_seed(21);
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
      {"bn", nn::make<nn::BatchNorm2d>(4, dev)},
      {"relu", nn::make<nn::ReLU>()},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc", nn::make<nn::Linear>(144, 10, dev)},
      {"logp", nn::make<nn::LogSoftmax>(1)}});
}

// SGD (lr 0.05), NLLLoss and a quiet Trainer over `m`: what these tests train with.
struct Fit {
  static cohort::optim::SGDOptions sgd() {
    cohort::optim::SGDOptions o;
    o.lr = 0.05;
    return o;
  }
  static train::TrainerOptions quiet(train::TrainerOptions to) {
    to.show_progress = false;
    return to;
  }
  Fit(nn::Module& m, const train::TrainerOptions& to)
      : opt(m.parameters(), sgd()), trainer(m, loss, opt, nullptr, quiet(to)) {}
  cohort::optim::SGD opt;
  nn::NLLLoss loss;
  train::Trainer trainer;
};

std::vector<std::vector<float>> floats(const nn::Module& m) {
  std::vector<std::vector<float>> w;
  for (const auto& e : m.state_dict())
    if (e.tensor.dtype() == cohort::DType::f32) w.push_back(e.tensor.to_vector<float>());
  return w;
}

}  // namespace

TEST_CASE("ExponentialMovingAverage equals torch's AveragedModel, buffers included, to the bit") {
  auto& dev = cohort::host_device();
  const auto& g = cohort::testing::golden_json("ema.json");
  auto model = golden_model(dev);
  set_state(*model, 0);
  train::ExponentialMovingAverage ema(*model, g.at("decay").get<double>());
  const auto& steps = g.at("steps");
  REQUIRE(steps.size() == 5);
  for (int k = 0; k < 5; ++k) {
    CAPTURE(k);
    set_state(*model, k);
    ema.update(*model);
    if (k == g.at("reset_after_update").get<int>()) ema.reset();
    const auto& want = steps[static_cast<std::size_t>(k)];
    const auto got = ema.state_dict();
    REQUIRE(got.size() == want.size());
    for (const auto& e : got) {
      CAPTURE(e.name);
      REQUIRE(want.contains(e.name));
      if (e.tensor.dtype() == cohort::DType::i64) {
        const auto v = e.tensor.to_vector<std::int64_t>();
        const auto& w = want.at(e.name);
        CHECK(v.front() == (w.is_array() ? w.at(0).get<std::int64_t>() : w.get<std::int64_t>()));
      } else {
        CHECK(e.tensor.to_vector<float>() == want.at(e.name).get<std::vector<float>>());
      }
    }
  }
}

TEST_CASE("Trainer with an EMA: cadence, warm-up resets, evaluation beside the model") {
  auto& dev = cohort::host_device();
  auto ds = std::make_shared<data::SyntheticDataset>(80, Shape{1, 8, 8}, 10, 3);
  const auto run = [&](train::ExponentialMovingAverage* ema, std::vector<train::EpochResult>* out) {
    auto model = small_net(dev);
    if (ema) *ema = train::ExponentialMovingAverage(*model, 0.9);
    train::TrainerOptions to;
    to.epochs = 2;
    to.ema = ema;
    to.ema_steps = 2;
    to.ema_warmup_epochs = 1;
    Fit fit(*model, to);
    data::DataLoaderOptions lo;
    lo.batch_size = 16;  // 5 steps per epoch: updates after steps 0, 2, 4
    data::DataLoader tr(ds, lo, {}, dev), te(ds, lo, {}, dev);
    *out = fit.trainer.fit(tr, &te);
    return model;
  };
  std::vector<train::EpochResult> plain_r, ema_r;
  auto plain = run(nullptr, &plain_r);
  train::ExponentialMovingAverage ema(*small_net(dev), 0.9);
  auto with_ema = run(&ema, &ema_r);
  // The EMA does not touch training: the same weights, the same evaluation.
  CHECK(floats(*with_ema) == floats(*plain));
  CHECK(ema_r.back().eval.correct == plain_r.back().eval.correct);
  // Epoch 1 (warm-up): each update reset; epoch 2: 3 updates (steps 0, 2, 4).
  CHECK(ema.n_averaged() == 3);
  CHECK(ema_r.front().eval_ema.samples == 80);
  // eval_ema equals evaluating a model holding the averaged weights.
  ema.swap(*with_ema);
  Fit fit(*with_ema, {});
  data::DataLoaderOptions lo;
  lo.batch_size = 16;
  data::DataLoader te(ds, lo, {}, dev);
  const train::EvalResult direct = fit.trainer.evaluate(te);
  CHECK(direct.correct == ema_r.back().eval_ema.correct);
  CHECK(direct.loss == doctest::Approx(ema_r.back().eval_ema.loss).epsilon(1e-12));
  CHECK(floats(*with_ema) != floats(*plain));  // the averages differ from the weights
}

TEST_CASE("EMA: train.py's decay adjustment and the errors") {
  // adjust = world x batch x steps / epochs = 2 x 32 x 32 / 600; alpha = (1 - 0.99998) x adjust.
  CHECK(train::ExponentialMovingAverage::adjusted_decay(0.99998, 2, 32, 32, 600) ==
        doctest::Approx(1.0 - (1.0 - 0.99998) * (2.0 * 32 * 32 / 600)));
  CHECK(train::ExponentialMovingAverage::adjusted_decay(0.5, 8, 256, 32, 1) == 0.0);  // alpha 1
  auto& dev = cohort::host_device();
  auto model = small_net(dev);
  CHECK(cohort::testing::mentions(error_of([&] { train::ExponentialMovingAverage(*model, 1.5); }),
                                  "decay 1.5 outside [0, 1]"));
  train::ExponentialMovingAverage ema(*model, 0.9);
  auto other = golden_model(dev);
  CHECK(cohort::testing::mentions(error_of([&] { ema.update(*other); }),
                                  "entry 0 is 0.weight [2, 1, 3, 3], the average's conv.weight"));
  train::TrainerOptions to;
  to.ema = &ema;
  to.ema_steps = 0;
  CHECK(cohort::testing::mentions(error_of([&] { Fit(*model, to); }),
                                  "ema_steps must be >= 1, got 0"));
}

TEST_CASE("EMA in checkpoints: a resumed run's averages equal an uninterrupted run's bits") {
  auto& dev = cohort::host_device();
  auto ds = std::make_shared<data::SyntheticDataset>(80, Shape{1, 8, 8}, 10, 3);
  cohort::testing::TempDir dir;
  // Runs epochs [1, epochs] with an EMA, saving to / resuming from `ckpt` ("" : no checkpoint).
  const auto run = [&](std::int64_t epochs, const std::string& ckpt, bool with_ema) {
    auto model = small_net(dev);
    auto ema = std::make_unique<train::ExponentialMovingAverage>(*model, 0.8);
    train::TrainerOptions to;
    to.epochs = epochs;
    to.ema = with_ema ? ema.get() : nullptr;
    to.ema_steps = 2;
    to.checkpoint_dir = ckpt;
    Fit fit(*model, to);
    data::DataLoaderOptions lo;
    lo.batch_size = 16;
    data::DataLoader tr(ds, lo, {}, dev);
    fit.trainer.fit(tr, nullptr);
    return std::pair{ema->state_dict(), floats(*model)};
  };
  const auto whole = run(2, "", true);
  run(1, dir.file("a"), true);               // epoch 1, saved
  const auto resumed = run(2, dir.file("a"), true);  // resumes after epoch 1, runs epoch 2
  CHECK(resumed.second == whole.second);
  REQUIRE(resumed.first.size() == whole.first.size());
  for (std::size_t i = 0; i < whole.first.size(); ++i) {
    CAPTURE(whole.first[i].name);
    if (whole.first[i].tensor.dtype() == cohort::DType::f32)
      CHECK(resumed.first[i].tensor.to_vector<float>() == whole.first[i].tensor.to_vector<float>());
    else
      CHECK(resumed.first[i].tensor.to_vector<std::int64_t>() ==
            whole.first[i].tensor.to_vector<std::int64_t>());
  }
  // A checkpoint saved without an EMA cannot continue a run that keeps one.
  run(1, dir.file("b"), false);
  CHECK(cohort::testing::mentions(error_of([&] { run(2, dir.file("b"), true); }),
                                  "holds no exponential moving average"));
}
