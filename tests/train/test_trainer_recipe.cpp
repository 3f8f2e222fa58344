// The Trainer's recipe options: max_steps as the run's total (and max_steps_per_epoch), the
// scheduler stepped per optimizer step, gradient clipping checked against a norm and an update
// computed here from the gradients the hook saw, evaluation's row in the phase table, and the
// options' bad values.
#include <doctest/doctest.h>

#include <cmath>

#include "../common/testing.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/trainer.hpp"

namespace nn = cohort::nn;
namespace data = cohort::data;
namespace train = cohort::train;
namespace optim = cohort::optim;
using cohort::Tensor;
using cohort::testing::error_of;

namespace {

nn::ModulePtr net(cohort::Device& dev) {
  nn::manual_seed(5);
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
      {"relu", nn::make<nn::ReLU>()},
      {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc", nn::make<nn::Linear>(36, 10, dev)}});
}

// 96 samples in batches of 16: 6 steps per epoch.
struct Run {
  cohort::Device& dev = cohort::host_device();
  std::shared_ptr<data::SyntheticDataset> ds =
      std::make_shared<data::SyntheticDataset>(96, cohort::Shape{1, 8, 8}, 10, 5);
  nn::ModulePtr model = net(dev);
  std::unique_ptr<optim::SGD> opt;
  nn::CrossEntropyLoss loss;
  data::DataLoader loader{ds, [] {
                            data::DataLoaderOptions o;
                            o.batch_size = 16;
                            o.shuffle = true;
                            o.seed = 3;
                            return o;
                          }(),
                          {}, dev};
  explicit Run(double lr = 0.1) {
    optim::SGDOptions o;
    o.lr = lr;
    opt = std::make_unique<optim::SGD>(model->parameters(), o);
  }
};

train::TrainerOptions quiet() {
  train::TrainerOptions to;
  to.show_progress = false;
  return to;
}

}  // namespace

TEST_CASE("max_steps is the run's total; max_steps_per_epoch caps each epoch") {
  Run a;
  auto to = quiet();
  to.epochs = 3;
  to.max_steps = 8;
  train::Trainer t(*a.model, a.loss, *a.opt, nullptr, to);
  const auto r = t.fit(a.loader);
  REQUIRE(r.size() == 2);  // 6 steps, then the 2 left; the third epoch never starts
  CHECK(r[0].steps == 6);
  CHECK(r[1].steps == 2);
  CHECK(t.global_step() == 8);
  CHECK(t.fit(a.loader, nullptr, 3).empty());  // the budget is spent, resumed or not

  Run b;
  to.max_steps = -1;
  to.max_steps_per_epoch = 4;
  to.epochs = 2;
  train::Trainer tb(*b.model, b.loss, *b.opt, nullptr, to);
  const auto rb = tb.fit(b.loader);
  REQUIRE(rb.size() == 2);
  CHECK(rb[0].steps == 4);
  CHECK(rb[1].steps == 4);
  CHECK(tb.global_step() == 8);
}

TEST_CASE("scheduler_interval = step steps the schedule after every optimizer step") {
  for (const auto interval : {train::SchedulerInterval::step, train::SchedulerInterval::epoch}) {
    Run a;
    optim::LinearLR warmup(*a.opt, 0.1, 1.0, 10);
    auto to = quiet();
    to.epochs = 2;
    to.scheduler_interval = interval;
    train::Trainer t(*a.model, a.loss, *a.opt, &warmup, to);
    t.fit(a.loader);
    const std::int64_t stepped = interval == train::SchedulerInterval::step ? 12 : 2;
    CHECK(warmup.last_epoch() == stepped);
    CHECK(a.opt->lr() == warmup.lr_at(0, stepped));
  }
}

TEST_CASE("max_grad_norm clips the step's gradients to the norm computed from them") {
  for (const std::int64_t accumulation : {1, 2}) {  // with accumulation: once, on the sum
    CAPTURE(accumulation);
    Run a(/*lr=*/1.0);
    auto to = quiet();
    to.max_steps = 1;
    to.accumulation = accumulation;
    to.max_grad_norm = 0.05;
    train::Trainer t(*a.model, a.loss, *a.opt, nullptr, to);
    std::vector<std::vector<float>> grads, before;
    for (const auto& p : a.model->parameters()) before.push_back(p->value.to_vector<float>());
    int calls = 0;
    t.after_backward = [&] {  // runs before clipping: the gradients as backward left them
      ++calls;
      for (const auto& p : a.model->parameters()) grads.push_back(p->grad.to_vector<float>());
    };
    const auto r = t.fit(a.loader);
    CHECK(calls == 1);
    double sq = 0;
    for (const auto& g : grads)
      for (const float v : g) sq += static_cast<double>(v) * v;
    const double norm = std::sqrt(sq);
    REQUIRE(norm > 0.05);  // the case must clip
    CHECK(r[0].grad_norm == doctest::Approx(norm).epsilon(1e-6));
    const float coef = (1.0f / (static_cast<float>(norm) + 1e-6f)) * 0.05f;
    const auto params = a.model->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto after = params[i]->value.to_vector<float>();
      for (std::size_t j = 0; j < after.size(); ++j)
        CHECK(after[j] == doctest::Approx(before[i][j] - coef * grads[i][j]).epsilon(1e-6));
    }
  }
}

TEST_CASE("evaluation has a row of its own in the phase table") {
  Run a;
  auto to = quiet();
  to.max_steps = 2;
  train::Trainer t(*a.model, a.loss, *a.opt, nullptr, to);
  data::DataLoader test(a.ds, data::DataLoaderOptions{}, {}, a.dev);
  const auto r = t.fit(a.loader, &test);
  CHECK(r[0].eval.samples == 96);
  CHECK(t.timer().total("evaluate") > 0);
  const std::string s = t.timer().summary();
  CHECK(s.find("evaluate") != std::string::npos);
  CHECK(s.find("(outside the steps)") != std::string::npos);
  CHECK(t.timer().mean_ms().count("evaluate") == 0);  // not a part of the steps' time
}

TEST_CASE("the recipe options refuse bad values, naming them") {
  Run a;
  auto bad = [&](auto set) {
    auto to = quiet();
    set(to);
    return error_of([&] { train::Trainer(*a.model, a.loss, *a.opt, nullptr, to); });
  };
  CHECK(bad([](auto& o) { o.max_steps_per_epoch = 0; })
            .find("max_steps_per_epoch must be >= 1 or -1, got 0") != std::string::npos);
  CHECK(bad([](auto& o) { o.max_steps = 0; }).find("max_steps must be >= 1 or -1, got 0") !=
        std::string::npos);
  CHECK(bad([](auto& o) { o.max_grad_norm = -1; })
            .find("max_grad_norm must be finite and >= 0 (0: no clipping), got -1") !=
        std::string::npos);
  CHECK(bad([](auto& o) { o.grad_norm_type = 0; }).find("grad_norm_type must be > 0") !=
        std::string::npos);
}

TEST_CASE("a warm-up + cosine SequentialLR stepped per step resumes from a checkpoint exactly") {
  cohort::testing::TempDir d;
  const std::string path = d.file("m.safetensors");
  // 12 steps in 2 epochs: warm-up over 4, then cosine over 8; epoch 1 ends inside the cosine.
  auto schedule = [](optim::Optimizer& opt) {
    std::vector<std::unique_ptr<optim::Scheduler>> parts;
    parts.push_back(std::make_unique<optim::LinearLR>(opt, 0.01, 1.0, 4));
    parts.push_back(std::make_unique<optim::CosineAnnealingLR>(opt, 8));
    return std::make_unique<optim::SequentialLR>(opt, std::move(parts),
                                                 std::vector<std::int64_t>{4});
  };
  auto options = [&](std::int64_t epochs) {
    auto to = quiet();
    to.epochs = epochs;
    to.scheduler_interval = train::SchedulerInterval::step;
    to.max_grad_norm = 0.5;
    to.checkpoint_path = path;
    return to;
  };
  Run a;
  auto sa = schedule(*a.opt);
  train::Trainer ta(*a.model, a.loss, *a.opt, sa.get(), options(2));
  ta.fit(a.loader);

  {
    Run b;
    auto sb = schedule(*b.opt);
    train::Trainer tb(*b.model, b.loss, *b.opt, sb.get(), options(1));
    tb.fit(b.loader);
    CHECK(sb->last_epoch() == 6);
  }
  Run c;
  for (const auto& p : c.model->parameters())  // other weights: the checkpoint must restore them
    cohort::ops::scale(0.5f, p->value, p->value);
  auto sc = schedule(*c.opt);
  train::Trainer tc(*c.model, c.loss, *c.opt, sc.get(), options(2));
  const auto got = tc.resume(path);
  CHECK(got.progress.epoch == 1);
  CHECK(sc->last_epoch() == 6);
  CHECK(sc->last_lr() == sa->lr_at(0, 6));
  tc.fit(c.loader);
  CHECK(tc.global_step() == 12);
  CHECK(sc->last_epoch() == 12);
  CHECK(c.opt->lr() == a.opt->lr());
  const auto pa = a.model->parameters(), pc = c.model->parameters();
  for (std::size_t i = 0; i < pa.size(); ++i)
    CHECK(pa[i]->value.to_vector<float>() == pc[i]->value.to_vector<float>());  // bit-identical
}

TEST_CASE("amp: bf16 trains through the Trainer (bf16 where the host has it); a bad type is refused") {
  Run f32, b16;
  auto to = quiet();
  train::Trainer t32(*f32.model, f32.loss, *f32.opt, nullptr, to);
  const auto r32 = t32.fit(f32.loader);
  to.amp = cohort::DType::bf16;
  train::Trainer t16(*b16.model, b16.loss, *b16.opt, nullptr, to);
  const auto r16 = t16.fit(b16.loader);
  REQUIRE(r16.size() == 1);
  CHECK(std::isfinite(r16[0].train_loss));
  CHECK(std::fabs(r16[0].train_loss - r32[0].train_loss) < 0.05 * r32[0].train_loss);
  // The same run in f32 and bf16 ends with other weights exactly when bf16 ran.
  CHECK((nn::state_digest(*f32.model) != nn::state_digest(*b16.model)) ==
        cohort::host_bf16_supported());
  Run bad;
  to.amp = cohort::DType::i32;
  CHECK(error_of([&] { train::Trainer t(*bad.model, bad.loss, *bad.opt, nullptr, to); })
            .find("amp must be bf16, f16 or f32 (off), got i32") != std::string::npos);
}

TEST_CASE("grad scaler: a loss that is NaN from the first step skips every step and halves the scale") {
  Run a;
  cohort::ops::fill(a.model->parameters()[0]->value, NAN);  // the conv's weight: every loss is NaN
  const std::string before = nn::state_digest(*a.model);
  optim::GradScaler scaler;  // 65536
  auto to = quiet();
  to.grad_scaler = &scaler;
  train::Trainer t(*a.model, a.loss, *a.opt, nullptr, to);
  const auto r = t.fit(a.loader);
  REQUIRE(r.size() == 1);
  CHECK(r[0].steps == 6);
  CHECK(r[0].skipped_steps == 6);
  CHECK(scaler.scale() == 1024.0f);  // 65536 / 2^6
  CHECK(nn::state_digest(*a.model) == before);  // no step was taken
}
