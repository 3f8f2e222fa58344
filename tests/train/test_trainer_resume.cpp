// Resuming a run that died: checkpoint_dir's own resume, mid-epoch saves every N steps, and the
// proof that the resumed run is the run that never stopped (the same weights digest), with every
// source of state in play: shuffling, random crops and flips (with and without data workers),
// Dropout's stream, momentum, a per-step schedule, gradient accumulation and clipping. A "crash"
// is an exception thrown from after_backward in the middle of a step; a fresh model, optimizer and
// Trainer then continue from the directory, as a restarted process would. Also: what a resume
// refuses (another world size, seed, accumulation; a partial pair; another model's checkpoint)
// without touching the directory, and the background writer's contract.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>

#include "../common/testing.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/trainer.hpp"

namespace nn = cohort::nn;
namespace data = cohort::data;
namespace train = cohort::train;
namespace optim = cohort::optim;
using cohort::Tensor;
using cohort::testing::error_of;

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string d = "/tmp/cohort_resume_" + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + d + "'").c_str());
  return d;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

optim::SGDOptions lr01() {
  optim::SGDOptions o;
  o.lr = 0.1;
  return o;
}

struct Crash : std::runtime_error {
  Crash() : std::runtime_error("simulated crash") {}
};

// A crash in the middle of an evaluation: the test loader's transform throws once the run has
// done `g_eval_crash_after` steps (set by the Job's after_backward hook through g_steps).
std::int64_t g_steps = 0, g_eval_crash_after = -1;
class CrashingIdentity final : public data::Transform {
 public:
  void apply(const float* in, const cohort::Shape& shape, float* out, std::uint64_t) const override {
    if (g_eval_crash_after >= 0 && g_steps >= g_eval_crash_after) throw Crash();
    std::copy(in, in + shape.numel(), out);
  }
};

// Stands for a reduced-precision overflow: the gradient of the inner model's first weight gets an
// inf in the last backward (of 2: accumulation) of the optimizer steps in g_overflow_steps
// (1-based, counted from g_backward_calls / 2 + 1).
std::set<std::int64_t> g_overflow_steps;
std::int64_t g_backward_calls = 0;
class Overflow final : public nn::Module {
 public:
  explicit Overflow(nn::ModulePtr inner) : nn::Module("Overflow"), inner_(std::move(inner)) {
    register_wrapped_module(inner_);
  }

 protected:
  Tensor forward_impl(const Tensor& x) override { return inner_->forward(x); }
  Tensor backward_impl(const Tensor& g, bool need) override {
    Tensor r = inner_->backward(g, need);
    ++g_backward_calls;
    if (g_backward_calls % 2 == 0 && g_overflow_steps.count(g_backward_calls / 2)) {
      Tensor& grad = inner_->parameters().front()->grad;
      std::vector<float> v = grad.to_vector<float>();
      v[0] = std::numeric_limits<float>::infinity();
      grad.copy_from(Tensor::from_vector(v, grad.shape(), grad.device()));
    }
    return r;
  }
  cohort::Shape output_shape_impl(const cohort::Shape& s) const override {
    return inner_->output_shape(s);
  }

 private:
  nn::ModulePtr inner_;
};

// 96 samples, batches of 8, accumulation 2: 6 optimizer steps per epoch.
struct Job {
  std::string dir;
  std::int64_t every = 4;
  int workers = 0;
  std::uint64_t seed = 3;
  std::int64_t accumulation = 2;
  std::int64_t world_size = 1;
  std::int64_t epochs = 3;
  std::int64_t max_steps = -1;
  bool eval = true;
  optim::GradScaler* scaler = nullptr;

  cohort::Device& dev = cohort::host_device();
  nn::ModulePtr model;
  std::unique_ptr<optim::SGD> opt;
  std::unique_ptr<optim::StepLR> sched;
  nn::CrossEntropyLoss loss;
  std::unique_ptr<data::DataLoader> loader, test;

  // A job with this one's settings and none of its state.
  Job same() const {
    Job n;
    n.dir = dir;
    n.every = every;
    n.workers = workers;
    n.seed = seed;
    n.accumulation = accumulation;
    n.world_size = world_size;
    n.epochs = epochs;
    n.eval = eval;
    n.max_steps = max_steps;
    return n;
  }


  void build() {
    nn::manual_seed(11);
    model = nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
        {"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
        {"relu", nn::make<nn::ReLU>()},
        {"drop", nn::make<nn::Dropout>(0.3f)},
        {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
        {"flatten", nn::make<nn::Flatten>()},
        {"fc", nn::make<nn::Linear>(36, 10, dev)}});
    if (!g_overflow_steps.empty()) model = nn::make<Overflow>(model);
    optim::SGDOptions so;
    so.lr = 0.05;
    so.momentum = 0.9;
    opt = std::make_unique<optim::SGD>(model->parameters(), so);
    sched = std::make_unique<optim::StepLR>(*opt, 4, 0.7);
    auto ds = std::make_shared<data::SyntheticDataset>(96, cohort::Shape{1, 8, 8}, 10, 5);
    data::DataLoaderOptions lo;
    lo.batch_size = 8;
    lo.shuffle = true;
    lo.seed = seed;
    lo.num_workers = workers;
    loader = std::make_unique<data::DataLoader>(
        ds, lo,
        std::vector<data::TransformPtr>{data::random_crop(8, 1), data::random_horizontal_flip()},
        dev);
    auto tds = std::make_shared<data::SyntheticDataset>(32, cohort::Shape{1, 8, 8}, 10, 9);
    data::DataLoaderOptions to;
    to.batch_size = 16;
    test = std::make_unique<data::DataLoader>(
        tds, to, std::vector<data::TransformPtr>{std::make_shared<CrashingIdentity>()}, dev);
  }

  train::TrainerOptions options() const {
    train::TrainerOptions o;
    o.epochs = epochs;
    o.show_progress = false;
    o.accumulation = accumulation;
    o.max_grad_norm = 0.5;
    o.scheduler_interval = train::SchedulerInterval::step;
    o.checkpoint_dir = dir;
    o.checkpoint_every_steps = every;
    o.world_size = world_size;
    o.max_steps = max_steps;
    o.grad_scaler = scaler;
    return o;
  }

  // Runs fit in a fresh process state (model, optimizer, loaders); throws Crash in the middle of
  // global step `crash_at` (1-based) when given. Returns the final weights' digest.
  std::string fit(std::int64_t crash_at = -1, std::int64_t* resumed_at = nullptr,
                  std::vector<train::EpochResult>* results = nullptr) {
    build();
    train::Trainer t(*model, loss, *opt, sched.get(), options());
    g_steps = 0;
    t.after_backward = [&] {
      g_steps = t.global_step() + 1;
      if (t.global_step() + 1 == crash_at) throw Crash();
    };
    const auto r = t.fit(*loader, eval ? test.get() : nullptr);
    if (results) *results = r;
    if (resumed_at) *resumed_at = t.global_step() - static_cast<std::int64_t>(t.loss_history().size());
    return nn::state_digest(*model);
  }
};

}  // namespace

TEST_CASE("a run killed at any step resumes from its directory and ends bit-identical") {
  for (const int workers : {0, 2}) {
    CAPTURE(workers);
    Job ref;
    ref.dir = fresh_dir("ref" + std::to_string(workers));
    ref.workers = workers;
    std::vector<train::EpochResult> want_epochs;
    const std::string want = ref.fit(-1, nullptr, &want_epochs);
    REQUIRE(want_epochs.size() == 3);
    // Crash points: before the first save, right after a save, mid-interval, in the epoch's last
    // step, at the first step of an epoch.
    for (const std::int64_t crash_at : {3, 5, 7, 12, 13, 17}) {
      CAPTURE(crash_at);
      Job j;
      j.dir = fresh_dir("crash" + std::to_string(workers) + "_" + std::to_string(crash_at));
      j.workers = workers;
      CHECK_THROWS_AS(j.fit(crash_at), Crash);
      std::int64_t resumed_at = -1;
      std::vector<train::EpochResult> got_epochs;
      CHECK(j.fit(-1, &resumed_at, &got_epochs) == want);
      // The newest save before the crash: every 4 steps and at each epoch's end (6 steps).
      const std::int64_t done = crash_at - 1;
      std::int64_t expect = 0;
      for (std::int64_t s = 1; s <= done; ++s)
        if (s % 4 == 0 || s % 6 == 0) expect = s;
      CHECK(resumed_at == expect);
      CHECK(done - resumed_at <= j.every);  // at most checkpoint_every_steps steps recomputed
      // The epochs the resumed run reports equal the uninterrupted run's, the interrupted one's
      // loss mean included (its sum so far travels in the checkpoint).
      REQUIRE(!got_epochs.empty());
      const auto& last = got_epochs.back();
      CHECK(last.epoch == 3);
      CHECK(last.train_loss == doctest::Approx(want_epochs.back().train_loss).epsilon(1e-12));
      CHECK(last.eval.correct == want_epochs.back().eval.correct);
      const auto& first = got_epochs.front();
      const auto& same = want_epochs[static_cast<std::size_t>(first.epoch - 1)];
      CHECK(first.train_loss == doctest::Approx(same.train_loss).epsilon(1e-12));
      CHECK(first.steps == same.steps);
    }
  }
}

TEST_CASE("without evaluation the epoch's last step is saved once, at the epoch's end") {
  Job ref;
  ref.dir = fresh_dir("noeval_ref");
  ref.eval = false;
  const std::string want = ref.fit();
  for (const std::int64_t crash_at : {7, 13, 14}) {
    CAPTURE(crash_at);
    Job j = ref.same();
    j.dir = fresh_dir("noeval" + std::to_string(crash_at));
    CHECK_THROWS_AS(j.fit(crash_at), Crash);
    std::int64_t resumed_at = -1;
    CHECK(j.fit(-1, &resumed_at) == want);
    CHECK(resumed_at == (crash_at == 7 ? 6 : 12));
  }
}

TEST_CASE("a crash in the evaluation after the step budget's last step still evaluates") {
  Job ref;
  ref.dir = fresh_dir("budget_ref");
  ref.max_steps = 12;  // ends in epoch 2, which is evaluated and saved
  std::vector<train::EpochResult> want_epochs;
  const std::string want = ref.fit(-1, nullptr, &want_epochs);
  REQUIRE(want_epochs.size() == 2);
  Job j = ref.same();
  j.dir = fresh_dir("budget");
  g_eval_crash_after = 12;  // epoch 2's evaluation fails; the newest save is step 12's
  CHECK_THROWS_AS(j.fit(), Crash);
  g_eval_crash_after = -1;
  std::vector<train::EpochResult> got;
  std::int64_t resumed_at = -1;
  CHECK(j.fit(-1, &resumed_at, &got) == want);
  CHECK(resumed_at == 12);
  REQUIRE(got.size() == 1);
  CHECK(got[0].epoch == 2);
  CHECK(got[0].steps == 6);
  CHECK(got[0].eval.correct == want_epochs[1].eval.correct);
  CHECK(got[0].train_loss == doctest::Approx(want_epochs[1].train_loss).epsilon(1e-12));
}

TEST_CASE("a finished run's directory resumes to nothing left to do") {
  Job j;
  j.dir = fresh_dir("finished");
  const std::string d = j.fit();
  std::int64_t resumed_at = -1;
  std::vector<train::EpochResult> again;
  CHECK(j.fit(-1, &resumed_at, &again) == d);
  CHECK(again.empty());
  CHECK(resumed_at == 18);
}

TEST_CASE("a resume that contradicts the saved run is refused and changes nothing") {
  Job saved;
  saved.dir = fresh_dir("refuse");
  CHECK_THROWS_AS(saved.fit(10), Crash);  // mid-epoch 2, newest save: step 8
  const std::string file = saved.dir + "/checkpoint.safetensors";
  const std::string before = file_bytes(file), before_state = file_bytes(train::state_path_for(file));

  Job other = saved.same();
  other.world_size = 2;
  std::string e = error_of([&] { other.fit(); });
  CHECK(e.find("world_size = '1', this run has '2'") != std::string::npos);
  CHECK(e.find("another number of ranks is not supported") != std::string::npos);

  Job seed = saved.same();
  seed.seed = 4;
  e = error_of([&] { seed.fit(); });
  CHECK(e.find("loader.seed = '3', this run has '4'") != std::string::npos);

  Job acc = saved.same();
  acc.accumulation = 1;
  e = error_of([&] { acc.fit(); });
  CHECK(e.find("accumulation = '2', this run has '1'") != std::string::npos);

  CHECK(file_bytes(file) == before);  // nothing overwritten by the refused attempts
  CHECK(file_bytes(train::state_path_for(file)) == before_state);

  // The same job still resumes.
  Job ref;
  ref.dir = fresh_dir("refuse_ref");
  Job again = saved.same();
  CHECK(again.fit() == ref.fit());
}

TEST_CASE("after an epoch-end save the next epochs may change the seed or the world size") {
  Job saved;
  saved.dir = fresh_dir("epochend");
  CHECK_THROWS_AS(saved.fit(13), Crash);  // newest save: the end of epoch 2 (after evaluation)
  Job other = saved.same();
  other.seed = 4;
  other.world_size = 2;  // images/s counting only, without a communicator
  std::vector<train::EpochResult> r;
  std::int64_t resumed_at = -1;
  CHECK_NOTHROW(other.fit(-1, &resumed_at, &r));
  CHECK(resumed_at == 12);
  REQUIRE(r.size() == 1);
  CHECK(r[0].epoch == 3);
}

TEST_CASE("a directory holding a partial pair or another model's checkpoint is refused") {
  Job j;
  j.dir = fresh_dir("partial");
  CHECK_THROWS_AS(j.fit(5), Crash);
  const std::string file = j.dir + "/checkpoint.safetensors";
  REQUIRE(std::remove(train::state_path_for(file).c_str()) == 0);
  const std::string model_bytes = file_bytes(file);
  std::string e = error_of([&] { j.fit(); });
  CHECK(e.find("cannot resume from checkpoint_dir '" + j.dir + "'") != std::string::npos);
  CHECK(e.find("does not exist") != std::string::npos);
  CHECK(e.find("nothing in it was changed") != std::string::npos);
  CHECK(file_bytes(file) == model_bytes);

  // Another model: a Linear-only net's checkpoint in the directory.
  Job k;
  k.dir = fresh_dir("othermodel");
  {
    cohort::Device& dev = cohort::host_device();
    auto m = nn::make<nn::Linear>(3, 2, dev);
    optim::SGD o(m->parameters(), lr01());
    ::mkdir(k.dir.c_str(), 0755);
    train::save_checkpoint(k.dir + "/checkpoint.safetensors", *m, o, nullptr, {1, 6});
  }
  e = error_of([&] { k.fit(); });
  CHECK(e.find("cannot resume from checkpoint_dir") != std::string::npos);
  CHECK(e.find("does not match the model") != std::string::npos);
}

TEST_CASE("checkpoint options: bad combinations are refused up front") {
  Job j;
  j.dir = fresh_dir("options");
  j.build();
  auto o = j.options();
  o.checkpoint_path = "/tmp/x.safetensors";
  CHECK(error_of([&] { train::Trainer(*j.model, j.loss, *j.opt, nullptr, o); })
            .find("set checkpoint_path or checkpoint_dir, not both") != std::string::npos);
  o = j.options();
  o.checkpoint_dir.clear();
  CHECK(error_of([&] { train::Trainer(*j.model, j.loss, *j.opt, nullptr, o); })
            .find("checkpoint_every_steps = 4 needs checkpoint_dir") != std::string::npos);
  o = j.options();
  o.checkpoint_every_steps = -1;
  CHECK(error_of([&] { train::Trainer(*j.model, j.loss, *j.opt, nullptr, o); })
            .find("checkpoint_every_steps must be >= 0") != std::string::npos);
  o = j.options();
  o.checkpoint_dir = "/proc/cohort_cannot_be_here";
  train::Trainer t(*j.model, j.loss, *j.opt, nullptr, o);
  CHECK(error_of([&] { t.fit(*j.loader); }).find("cannot create checkpoint directory") !=
        std::string::npos);
}

TEST_CASE("CheckpointWriter: one write at a time, errors surface, the previous pair survives") {
  cohort::Device& dev = cohort::host_device();
  nn::manual_seed(2);
  auto m = nn::make<nn::Linear>(64, 64, dev);
  optim::SGD o(m->parameters(), lr01());
  const std::string dir = fresh_dir("writer");
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/c.safetensors";
  train::CheckpointWriter w;
  for (std::int64_t step = 1; step <= 3; ++step)
    w.save(path, train::snapshot_checkpoint(*m, o, nullptr, {0, step, step, {}}));
  const auto t = w.wait();
  CHECK(t.step == 3);
  CHECK(t.bytes == (64 * 64 + 64) * 4);
  for (std::int64_t step = 1; step <= 3; ++step)  // each finished write is reported once, in order
    CHECK(w.take_finished().step == step);
  CHECK(w.take_finished().step == -1);
  auto m2 = nn::make<nn::Linear>(64, 64, dev);
  optim::SGD o2(m2->parameters(), lr01());
  const auto got = train::load_checkpoint(path, *m2, o2, nullptr);
  CHECK(got.progress.global_step == 3);
  CHECK(got.progress.step_in_epoch == 3);
  CHECK(nn::state_digest(*m2) == nn::state_digest(*m));

  // A write that fails: its error comes out of the next save or wait, naming the file.
  w.save("/proc/cohort_no/c.safetensors", train::snapshot_checkpoint(*m, o, nullptr, {0, 4, 0, {}}));
  CHECK(error_of([&] { w.wait(); }).find("/proc/cohort_no/c.safetensors") != std::string::npos);
  CHECK(train::load_checkpoint(path, *m2, o2, nullptr).progress.global_step == 3);
}

TEST_CASE("a GradScaler in the Trainer: exact when nothing overflows, skips overflowing steps") {
  // A power-of-two scale multiplies and divides exactly: the run equals the run without one.
  Job plain;
  plain.dir = fresh_dir("scaler_plain");
  const std::string want = plain.fit();
  Job scaled = plain.same();
  scaled.dir = fresh_dir("scaler_65536");
  optim::GradScaler scaler;  // 65536
  scaled.scaler = &scaler;
  std::vector<train::EpochResult> r;
  CHECK(scaled.fit(-1, nullptr, &r) == want);
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.skipped_steps() == 0);

  // Steps whose scaled gradients overflow (here: an inf put in) are skipped, the scale halves
  // each time, and the Trainer counts them.
  g_overflow_steps = {2, 3, 9, 14};
  Job big = plain.same();
  big.dir = fresh_dir("scaler_overflow");
  optim::GradScaler overflow;
  big.scaler = &overflow;
  g_backward_calls = 0;
  const std::string want_big = big.fit(-1, nullptr, &r);
  CHECK(want_big != want);
  REQUIRE(r.size() == 3);
  CHECK(r[0].skipped_steps == 2);  // steps 2, 3 of epoch 1
  CHECK(r[1].skipped_steps == 1);  // step 9
  CHECK(r[2].skipped_steps == 1);  // step 14
  CHECK(overflow.skipped_steps() == 4);
  CHECK(overflow.scale() == 65536.0f / 16);

  // Its state is in the checkpoint: a crash and a resume continue with the same scale, to the
  // same weights.
  Job crash = big.same();
  crash.dir = fresh_dir("scaler_crash");
  optim::GradScaler first, second;
  crash.scaler = &first;
  g_backward_calls = 0;
  CHECK_THROWS_AS(crash.fit(11), Crash);  // newest save: step 8, after the skips of steps 2 and 3
  crash.scaler = &second;
  g_backward_calls = 8 * 2;
  std::int64_t resumed_at = -1;
  CHECK(crash.fit(-1, &resumed_at, &r) == want_big);
  CHECK(resumed_at == 8);
  CHECK(second.scale() == overflow.scale());
  CHECK(second.skipped_steps() == 2);  // steps 9 and 14; 2 and 3 were before the save
  REQUIRE(!r.empty());
  CHECK(r[0].skipped_steps == 1);  // epoch 2: step 9 (the epoch's earlier steps had none)
  g_overflow_steps.clear();
}
