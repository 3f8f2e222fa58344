// ZeRO stage 3's own checks (its bits against DDP, with the other stages, are in test_zero.cpp):
// the units (FSDP's size policy, named units, the root unit, frozen parameters), the options
// (prefetch off, values kept through forward: DDP's bits, the bytes each moves), the model state
// the host allocator holds (16P/n with Adam between steps; backward's peak a few units above it,
// far below stage 2's), reading and writing the whole model (summon_full_params, evaluation), the
// Trainer's evaluation on test shards of different batch counts, and bad input named.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../common/testing.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/trainer.hpp"
#include "zero_fixture.hpp"

namespace {
using cohort::testing::error_of;
using namespace zero_test;

// Deterministic DDP and deterministic stage 3 with `tune` applied to its options, `steps` steps
// of SGD with momentum each (`freeze`: parameters made frozen before wrapping, in both); the
// digests, and the stage-3 DDP for more checks.
struct Pair {
  std::string ddp, zero;
  std::shared_ptr<par::DistributedDataParallel> sharded;
  std::shared_ptr<ByteCountingComm> counting;
  double sent = 0;  // the steps' elements sent, and their all-gathers
  int allgathers = 0;
};
Pair stage3_against_ddp(const ModelCase& mc, const std::function<void(par::DDPOptions&)>& tune,
                        int steps, const std::set<std::string>& freeze = {}) {
  const auto sgd = optimizers()[0].second;
  const auto model = [&] {
    auto m = make_model(mc, 11);
    for (const auto& p : m->named_parameters())
      if (freeze.count(p.name)) p.param->requires_grad = false;
    return m;
  };
  par::DDPOptions o;
  o.deterministic = true;
  auto ddp = nn::make<par::DistributedDataParallel>(model(), ddp_test::shared_comm(), o);
  auto opt = sgd(par::trainable_parameters(ddp->module()));
  train(*ddp, *opt, mc, steps, 2);
  o.zero_stage = 3;
  tune(o);
  Pair r;
  r.counting = std::make_shared<ByteCountingComm>(ddp_test::shared_comm());
  r.sharded = nn::make<par::DistributedDataParallel>(model(), r.counting, o);
  auto zopt = sgd(r.sharded->shard_parameters(par::trainable_parameters(r.sharded->module())));
  r.sharded->attach_optimizer(*zopt);
  r.counting->sent = 0;
  r.counting->allgathers = 0;
  train(*r.sharded, *zopt, mc, steps, 2);
  r.sent = r.counting->sent;  // before the digest's own gather
  r.allgathers = r.counting->allgathers;
  r.ddp = ddp->weights_digest();
  r.zero = r.sharded->weights_digest();
  return r;
}

std::string layout_str(const par::DistributedDataParallel& d) {
  std::string s;
  for (const auto& [path, names] : d.shard_unit_layout())
    s += (s.empty() ? "" : " | ") + (path.empty() ? std::string("(root)") : path) + ": " +
         std::to_string(names.size());
  return s;
}

}  // namespace

TEST_CASE("ZeRO stage 3: units by FSDP's size policy or by name, each parameter in one") {
  const ModelCase resnet{"resnet9", Shape{3, 16, 16}};
  par::DDPOptions o;
  o.zero_stage = 3;
  o.bucket_cap_mb = 0.5;  // splits ResNet9's larger stages into their blocks
  par::DistributedDataParallel d(make_model(resnet, 1), ddp_test::shared_comm(), o);
  MESSAGE("resnet9 units (bucket_cap_mb 0.5): " << layout_str(d));
  std::set<std::string> seen;
  std::size_t count = 0;
  for (const auto& [path, names] : d.shard_unit_layout()) {
    CHECK(!names.empty());
    for (const auto& name : names) {
      CHECK(seen.insert(name).second);
      if (!path.empty()) CHECK(name.compare(0, path.size() + 1, path + ".") == 0);
    }
    count += names.size();
  }
  CHECK(count == par::trainable_parameters(d.module()).size());
  // Every unit is a child of the root or, where the child held more than the cap, one of its
  // children: at 0.5 MiB some unit path has a dot.
  bool split = false;
  for (const auto& [path, names] : d.shard_unit_layout())
    split |= path.find('.') != std::string::npos;
  CHECK(split);

  // Named units: the parameters outside them form the root unit, issued last (fc1's and fc2's
  // gradients are final first, conv1's last).
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  o.shard_units = {"conv2", "fc1"};
  par::DistributedDataParallel named(make_model(mnist, 1), ddp_test::shared_comm(), o);
  const auto layout = named.shard_unit_layout();
  MESSAGE("mnist_net units {conv2, fc1}: " << layout_str(named));
  REQUIRE(layout.size() == 3);
  CHECK(layout[0].first == "fc1");
  CHECK(layout[1].first == "conv2");
  CHECK(layout[2].first == "");
  CHECK(layout[2].second ==
        std::vector<std::string>{"fc2.bias", "fc2.weight", "conv1.bias", "conv1.weight"});
}

TEST_CASE(
    "ZeRO stage 3: prefetch off, values kept through forward, a root unit, frozen "
    "parameters: DDP's bits, and the bytes each moves") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const int n = ddp_test::comm().size();
  const auto bytes_of = [](const Pair& r) { return r.sent; };
  // The default (every unit gathered twice a step) as the reference for the bytes.
  const Pair base = stage3_against_ddp(
      mnist, [](par::DDPOptions&) {}, 2);
  CHECK(base.ddp == base.zero);
  const double e = static_cast<double>(base.sharded->bucket_elements());
  CHECK(bytes_of(base) == doctest::Approx(2 * 3.0 * (n - 1) / n * e));  // two steps

  const Pair no_prefetch = stage3_against_ddp(
      mnist, [](par::DDPOptions& o) { o.prefetch = false; }, 2);
  CHECK(no_prefetch.ddp == no_prefetch.zero);
  CHECK(bytes_of(no_prefetch) == bytes_of(base));

  // FSDP's reshard_after_forward=False: one gather a unit a step.
  const Pair kept = stage3_against_ddp(
      mnist, [](par::DDPOptions& o) { o.reshard_after_forward = false; }, 2);
  CHECK(kept.ddp == kept.zero);
  CHECK(bytes_of(kept) == doctest::Approx(2 * 2.0 * (n - 1) / n * e));
  if (n > 1) CHECK(kept.allgathers * 2 == base.allgathers);

  // A root unit (conv1 and fc2 outside the units) is gathered once a step, at DDP's forward.
  const Pair rooted = stage3_against_ddp(
      mnist,
      [](par::DDPOptions& o) {
        o.shard_units = {"conv2", "fc1"};
      },
      2);
  CHECK(rooted.ddp == rooted.zero);
  if (n > 1) CHECK(rooted.allgathers == 2 * (2 * 2 + 1));

  // Frozen parameters (conv1's) stay whole and are never communicated.
  const Pair frozen =
      stage3_against_ddp(mnist, [](par::DDPOptions&) {}, 2, {"conv1.weight", "conv1.bias"});
  CHECK(frozen.ddp == frozen.zero);
  for (const auto& [path, names] : frozen.sharded->shard_unit_layout()) CHECK(path != "conv1");
  for (const auto& p : frozen.sharded->module().named_parameters())
    CHECK_MESSAGE(p.param->value.defined() == (p.name.rfind("conv1.", 0) == 0 || n == 1), p.name);
  if (n > 1) CHECK(bytes_of(frozen) < bytes_of(base));
}

TEST_CASE("ZeRO stage 3: model state 16P/n with Adam between steps; backward's peak a few units") {
  // 24 Linear(128, 128) + ReLU and a head: 25 units (the size policy's children of the root).
  auto& dev = ddp_test::test_device();
  const int n = ddp_test::comm().size(), rank = ddp_test::comm().rank();
  const auto make_mlp = [&] { return deep_mlp(dev); };
  const auto batch = deep_mlp_batch(dev, rank);
  const Tensor &x = batch.first, &y = batch.second;

  double params = 0, state[4] = {0, 0, 0, 0}, peak[4] = {0, 0, 0, 0}, biggest_unit = 0;
  for (const int stage : {2, 3}) {
    CAPTURE(stage);
    const double baseline = static_cast<double>(dev.memory_stats().bytes_in_use);
    par::DDPOptions o;
    o.zero_stage = stage;
    o.deterministic = true;
    o.bucket_cap_mb = o.first_bucket_mb = 0.1;  // stage 2: buckets of a unit's size
    auto zero = nn::make<par::DistributedDataParallel>(make_mlp(), ddp_test::shared_comm(), o);
    params = static_cast<double>(zero->module().num_parameters());
    if (stage == 3) {
      CHECK(zero->shard_unit_layout().size() == 25);
      biggest_unit = 4.0 * (128 * 128 + 128 + 64 + n);  // values, with their padding
    }
    const double owned = static_cast<double>(zero->owned_elements());
    auto opt = par::make_zero_optimizer<optim::Adam>(*zero, optim::AdamOptions{});
    nn::CrossEntropyLoss loss;
    for (int s = 0; s < 2; ++s) {
      opt->zero_grad();
      const double start = static_cast<double>(dev.memory_stats().bytes_in_use);
      dev.reset_peak_memory_stats();
      loss.forward(zero->forward(x), y);
      zero->backward(loss.backward(), false);
      opt->step();
      peak[stage] = static_cast<double>(dev.memory_stats().peak_in_use) - start;
      state[stage] = static_cast<double>(dev.memory_stats().bytes_in_use) - baseline;
      if (stage == 3 && n > 1)
        for (const auto& p : zero->module().named_parameters())
          CHECK_MESSAGE(!p.param->value.defined(), p.name << " keeps a whole value between steps");
    }
    // Stage 3: values, gradients and Adam's two moments, each 1/n (f32: 16P/n; the issue's
    // formula), within 2% + 1 MiB (padding, the allocator's rounding, the DDP's own small parts).
    // Stage 2: the values whole (4P) and the rest 1/n.
    // One rank: stage 1's layout, whose gradient bucket is the communicator's memory, which the
    // device's allocator does not count (4P less).
    const double formula = (stage == 3 ? 16.0 * params / n : 4.0 * params + 12.0 * params / n) -
                           (n == 1 ? 4.0 * params : 0.0);
    MESSAGE("n=" << n << ", stage " << stage << ": model state " << state[stage] << " B, formula "
                 << formula << " B (16 x owned " << 16 * owned << " B); a step's peak above it "
                 << peak[stage] << " B");
    CHECK(state[stage] <= formula * 1.02 + 1024 * 1024);
    CHECK(state[stage] >= formula * 0.98);
  }
  if (n == 1) return;
  // What stage 3 holds at its peak beyond the model state is stage 2's (activations, gradient
  // buckets in flight, the step's temporaries) and the units gathered at once: the running one
  // and the one prefetched, each with its values.
  CHECK(peak[3] <= peak[2] + 2 * biggest_unit + 64 * 1024);
  // And the whole of it is well below stage 2's, which holds every value whole.
  CHECK(state[3] + peak[3] < state[2] + peak[2] - 0.5 * 4.0 * params * (n - 1) / n);
}

TEST_CASE("ZeRO stage 3: summon_full_params reads and writes the whole model; eval gathers") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const int n = ddp_test::comm().size();
  const auto sgd = optimizers()[0].second;
  par::DDPOptions o;
  o.deterministic = true;
  auto ddp =
      nn::make<par::DistributedDataParallel>(make_model(mnist, 5), ddp_test::shared_comm(), o);
  auto opt = sgd(par::trainable_parameters(ddp->module()));
  train(*ddp, *opt, mnist, 2, 2);
  o.zero_stage = 3;
  auto zero =
      nn::make<par::DistributedDataParallel>(make_model(mnist, 5), ddp_test::shared_comm(), o);
  auto zopt = sgd(zero->shard_parameters(par::trainable_parameters(zero->module())));
  zero->attach_optimizer(*zopt);
  train(*zero, *zopt, mnist, 2, 2);
  // Between steps: released values that still tell their shapes.
  for (const auto& p : zero->module().named_parameters()) {
    CHECK(p.param->value.defined() == (n == 1));
    CHECK(p.param->value.shape().numel() > 1);
  }
  {
    const auto whole = zero->summon_full_params(false);
    const auto a = ddp->module().state_dict();
    auto b = zero->module().state_dict();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].name);
      CHECK(a[i].tensor.to_vector<float>() == b[i].tensor.to_vector<float>());
    }
    if (n > 1)  // without writeback: lost (one rank's values are its shards: nothing to lose)
      b[0].tensor.copy_from(
          Tensor::zeros(b[0].tensor.shape(), cohort::DType::f32, b[0].tensor.device()));
  }
  CHECK(zero->weights_digest() == ddp->weights_digest());
  // Saving: inside summon_full_params the whole model (a file with DDP's weights); outside it a
  // released value is refused by name.
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("zero3_save_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  if (n > 1) {
    const std::string outside = error_of([&] { cohort::train::save_model(file, zero->module()); });
    CAPTURE(outside);
    CHECK(outside.find("value lives elsewhere: a ZeRO stage 3 parameter between uses; save inside "
                       "DistributedDataParallel::summon_full_params") != std::string::npos);
  }
  {
    const auto whole = zero->summon_full_params(false);
    cohort::train::save_model(file, zero->module());
  }
  auto reloaded = make_model(mnist, 6);
  cohort::train::load_model(file, *reloaded);
  CHECK(par::weights_digest(*reloaded) == ddp->weights_digest());
  // The whole file loaded into another stage-3 model inside summon_full_params (writeback): each
  // rank keeps its chunk, and the model it holds is the file's.
  auto other =
      nn::make<par::DistributedDataParallel>(make_model(mnist, 7), ddp_test::shared_comm(), o);
  CHECK(other->weights_digest() != ddp->weights_digest());
  {
    const auto whole = other->summon_full_params();
    cohort::train::load_model(file, other->module());
  }
  std::filesystem::remove(file);
  CHECK(other->weights_digest() == ddp->weights_digest());
  if (n > 1)
    for (const auto& p : other->module().named_parameters()) CHECK(!p.param->value.defined());
  // Evaluation (no gradients) gathers each unit for its forward and frees it after: the output is
  // DDP's, and nothing stays gathered.
  auto [x, y] = batch_of(mnist, 9, ddp->communicator().rank(), 3, n);
  ddp->eval();
  zero->eval();
  {
    nn::NoGradGuard no_grad;
    CHECK(ddp->forward(x).to_vector<float>() == zero->forward(x).to_vector<float>());
  }
  for (const auto& p : zero->module().named_parameters())
    CHECK(p.param->value.defined() == (n == 1));
  // Writeback: a checkpoint (DDP's weights after one more step) loaded into the sharded model;
  // each rank keeps its chunk, and the model gathered again is the checkpoint's.
  ddp->train();
  zero->train();
  train(*ddp, *opt, mnist, 1, 2);
  CHECK(zero->weights_digest() != ddp->weights_digest());
  {
    const auto whole = zero->summon_full_params();
    zero->load_state_dict(ddp->module().state_dict());
  }
  CHECK(zero->weights_digest() == ddp->weights_digest());
  // The optimizer's pieces are the same memory: one more identical step on both stays equal.
  train(*ddp, *opt, mnist, 1, 2);
  train(*zero, *zopt, mnist, 1, 2);
  CHECK(zero->weights_identical_across_ranks());
}

TEST_CASE("ZeRO stage 3: bad units and a module run outside its unit are refused by name") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const auto build = [&](std::vector<std::string> units) {
    par::DDPOptions o;
    o.zero_stage = 3;
    o.shard_units = std::move(units);
    return error_of(
        [&] { par::DistributedDataParallel d(make_model(mnist, 1), ddp_test::shared_comm(), o); });
  };
  const std::string unknown = build({"conv1", "layer9"});
  CAPTURE(unknown);
  CHECK(unknown.find("shard_units names 'layer9', which is no module of the model (its "
                     "modules: conv1, ") != std::string::npos);
  CHECK(build({""}).find("shard_units names the root") != std::string::npos);
  CHECK(build({"fc1", "fc1"}).find("names 'fc1' twice") != std::string::npos);
  const std::string relu = build({"conv1", "relu1"});
  CAPTURE(relu);
  CHECK(relu.find("unit 'relu1' (ReLU) holds no parameter that requires a gradient") !=
        std::string::npos);
  // Nested units: a Residual block of ResNet9 and a layer inside it.
  par::DDPOptions o;
  o.zero_stage = 3;
  par::DistributedDataParallel probe(make_model({"resnet9", Shape{3, 16, 16}}, 1),
                                     ddp_test::shared_comm(), o);
  std::string outer, inner;
  for (const auto& [path, names] : probe.shard_unit_layout())
    if (!path.empty() && names.size() > 2 && outer.empty()) {
      outer = path;
      inner = names.front().substr(0, names.front().rfind('.'));
    }
  REQUIRE(!outer.empty());
  o.shard_units = {outer, inner};
  const std::string nested = error_of([&] {
    par::DistributedDataParallel d(make_model({"resnet9", Shape{3, 16, 16}}, 1),
                                   ddp_test::shared_comm(), o);
  });
  CAPTURE(nested);
  CHECK(nested.find("unit '" + inner + "' is inside unit '" + outer + "': units must not nest") !=
        std::string::npos);
  // The wrapped model run without its DDP: the units gather themselves, but the root unit (fc2
  // here) is gathered only by DDP's forward, so fc2 refuses to run on a released value.
  o.shard_units = {"conv1", "conv2", "fc1"};
  auto zero =
      nn::make<par::DistributedDataParallel>(make_model(mnist, 1), ddp_test::shared_comm(), o);
  auto [x, y] = batch_of(mnist, 0, zero->communicator().rank(), 2, zero->communicator().size());
  if (zero->communicator().size() > 1) {
    const std::string outside = error_of([&] { zero->module().forward(x); });
    CAPTURE(outside);
    CHECK(outside.find("Linear(fc2): parameter 'weight' has no value here: it is sharded (ZeRO "
                       "stage 3)") != std::string::npos);
  }
  // The DDP itself still trains after that (the units the failed forward gathered were freed).
  optim::SGDOptions so;
  so.lr = 0.01;
  auto zopt = par::make_zero_optimizer<optim::SGD>(*zero, so);
  train(*zero, *zopt, mnist, 1, 2);
  CHECK(zero->weights_identical_across_ranks());
}

TEST_CASE("ZeRO stage 3: the Trainer evaluates test shards of different batch counts as DDP") {
  // 2n + 1 samples in batches of 2, unpadded: rank 0 gets 3 (two batches), every other rank 2
  // (one). At stage 3 each forward is collective, so the others repeat a forward, dropped.
  const int n = ddp_test::comm().size();
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  auto& dev = cohort::host_device();
  const auto evaluate = [&](int stage) {
    par::DDPOptions o;
    o.zero_stage = stage;
    o.deterministic = true;
    auto ddp =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 1), ddp_test::shared_comm(), o);
    optim::SGDOptions so;
    so.lr = 0.01;
    std::unique_ptr<optim::Optimizer> opt =
        stage > 0
            ? std::unique_ptr<optim::Optimizer>(par::make_zero_optimizer<optim::SGD>(*ddp, so))
            : std::make_unique<optim::SGD>(par::trainable_parameters(ddp->module()), so);
    auto ds = std::make_shared<cohort::data::SyntheticDataset>(2 * n + 1, mnist.input, 10, 7);
    cohort::data::DataLoaderOptions lo;
    lo.batch_size = 2;
    cohort::data::DataLoader test(ds, lo, {}, dev);
    nn::NLLLoss loss;
    cohort::train::TrainerOptions to;
    to.show_progress = false;
    cohort::train::Trainer trainer(*ddp, loss, *opt, nullptr, to);
    const auto r = trainer.evaluate(test);
    CHECK(test.num_batches() == (n > 1 && ddp_test::comm().rank() == 0 ? 2 : n > 1 ? 1 : 2));
    return r;
  };
  const auto ddp = evaluate(0), zero = evaluate(3);
  CHECK(zero.samples == 2 * n + 1);
  CHECK(zero.samples == ddp.samples);
  CHECK(zero.correct == ddp.correct);
  CHECK(zero.loss == ddp.loss);  // the same forwards on the same weights, summed in rank order
}

namespace {

// a, then b (twice a's size) except on rank `skip`, then a head: a rank whose forward takes
// another path than the others', as a data-dependent branch would.
class SkipsOnRank final : public nn::Module {
 public:
  SkipsOnRank(int skip, int rank, cohort::Device& dev)
      : Module("SkipsOnRank"), skip_(skip == rank) {
    nn::manual_seed(5);
    a_ = nn::make<nn::Linear>(16, 16, dev);
    b_ = nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
        {"0", nn::make<nn::Linear>(16, 16, dev)}, {"1", nn::make<nn::Linear>(16, 16, dev)}});
    head_ = nn::make<nn::Linear>(16, 10, dev);
    register_module("a", a_);
    register_module("b", b_);
    register_module("head", head_);
  }

 protected:
  Tensor forward_impl(const Tensor& x) override {
    Tensor h = a_->forward(x);
    if (!skip_) h = b_->forward(h);
    return head_->forward(h);
  }
  Tensor backward_impl(const Tensor& g, bool need_input_grad) override {
    Tensor gh = head_->backward(g, true);
    if (!skip_) gh = b_->backward(gh, true);
    return a_->backward(gh, need_input_grad);
  }
  Shape output_shape_impl(const Shape& input) const override { return head_->output_shape(input); }

 private:
  const bool skip_;
  nn::ModulePtr a_, b_, head_;
};

}  // namespace

// Breaks the job's communicator: runs alone (parallel_zero3_skip_gather_*,
// COHORT_TEST_BREAKS_COMM).
TEST_CASE("ZeRO stage 3: a rank that skips a unit's gather is named, with both sides") {
  auto& c = ddp_test::comm();
  if (c.size() < 2) return;
  par::DDPOptions o;
  o.zero_stage = 3;
  o.shard_units = {"a", "b", "head"};
  auto zero = nn::make<par::DistributedDataParallel>(
      std::make_shared<SkipsOnRank>(1, c.rank(), ddp_test::test_device()), ddp_test::shared_comm(),
      o);
  optim::SGDOptions so;
  so.lr = 0.1;
  auto opt = par::make_zero_optimizer<optim::SGD>(*zero, so);
  std::vector<float> xs(2 * 16, 0.5f);
  const Tensor x = Tensor::from_vector(xs, Shape{2, 16}, ddp_test::test_device());
  const Tensor y =
      Tensor::from_vector(std::vector<std::int64_t>{1, 2}, Shape{2}, ddp_test::test_device());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] {
    nn::CrossEntropyLoss loss;
    loss.forward(zero->forward(x), y);
    zero->backward(loss.backward(), false);
    opt->step();
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(e);
  // Both sides on every rank: rank 0's all-gather of unit b against the one rank 1 issued in its
  // place (the head's), within the collective timeout (COHORT_COMM_TIMEOUT_MS, 5 s here).
  CHECK(e.find("collective mismatch: rank 0 issued allgather #") != std::string::npos);
  CHECK(e.find("where rank 1 issued allgather #") != std::string::npos);
  // (Which rank's error also names its unit depends on where each rank waits first: a
  // prefetched gather fails inside the op that waits for it.)
  CHECK(s < 10.0);
}
