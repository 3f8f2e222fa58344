// DistributedDataParallel, run as real processes (cohortrun --nproc-per-node 2, COHORT_COMM=shm
// or ucx). Every rank also trains the world-size-1 reference itself, on a plain model with the
// whole batch, so the comparisons need no communication beyond what DDP does.
//
// Model: conv(1->4, 3x3) -> relu -> maxpool 2 -> flatten -> linear(36 -> 10) -> log-softmax, no
// dropout, on SyntheticDataset 1x8x8; NLL loss (mean), plain SGD (ddp_fixture.hpp). The GPU
// ordering paths, on the lazy-stream test device, are in test_ddp_device.cpp.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/train/trainer.hpp"
#include "ddp_fixture.hpp"
#include "ddp_test.hpp"

namespace nn = cohort::nn;
namespace optim = cohort::optim;
namespace par = cohort::parallel;
using cohort::Tensor;

using namespace ddp_test;

namespace {

// The world-size-1 reference: `steps` SGD steps with the whole global batch.
nn::ModulePtr reference(int steps, std::uint64_t seed = 1) {
  auto m = small_net(seed);
  optim::SGD opt(m->parameters(), sgd());
  for (int s = 0; s < steps; ++s) {
    m->zero_grad();
    forward_backward(*m, batch(dataset(), s, 0, kGlobalBatch));
    opt.step();
  }
  return m;
}

// max |a - b| / max |b| over each f32 state_dict entry; the worst entry.
double max_relative_difference(const nn::Module& a, const nn::Module& b) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  REQUIRE(sa.size() == sb.size());
  double worst = 0;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    const auto va = sa[i].tensor.to_vector<float>(), vb = sb[i].tensor.to_vector<float>();
    double diff = 0, scale = 0;
    for (std::size_t k = 0; k < va.size(); ++k) {
      diff = std::max(diff, static_cast<double>(std::fabs(va[k] - vb[k])));
      scale = std::max(scale, static_cast<double>(std::fabs(vb[k])));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-12));
  }
  return worst;
}
}  // namespace


TEST_CASE("equivalence: N ranks x batch 64/N equal 1 rank x batch 64 after 20 steps") {
  auto& c = ddp_test::comm();
  REQUIRE(kGlobalBatch % c.size() == 0);
  // A different seed per rank: the constructor's broadcast must make them start equal.
  par::DistributedDataParallel ddp(small_net(1 + static_cast<std::uint64_t>(c.rank()) * 100),
                                   ddp_test::shared_comm());
  train_ddp(ddp, kSteps);
  auto ref = reference(kSteps);
  const double rel = max_relative_difference(ddp.module(), *ref);
  MESSAGE("backend " << c.backend() << ", " << c.size() << " ranks: max relative difference " << rel
                     << ", stats: comm wait " << ddp.stats().comm_wait_s * 1e3 << " ms, all-reduce "
                     << ddp.stats().allreduce_s * 1e3 << " ms, overlap "
                     << ddp.stats().overlap_s * 1e3 << " ms over " << ddp.stats().steps
                     << " steps");
  CHECK(rel <= 1e-5);
  if (c.size() > 1) CHECK(ddp.stats().steps == kSteps);
  // Digest all-gather: every rank holds bit-identical weights.
  CHECK(ddp.weights_identical_across_ranks());
}

TEST_CASE("digest: identical after training, different when one rank's weights change") {
  auto& c = ddp_test::comm();
  par::DistributedDataParallel ddp(small_net(3), ddp_test::shared_comm());
  train_ddp(ddp, 2);
  CHECK(ddp.weights_identical_across_ranks());
  CHECK(ddp.weights_digest() == par::weights_digest(ddp.module()));
  if (c.size() > 1) {
    if (c.rank() == c.size() - 1) {
      auto w = ddp.module().named_parameters()[0].param->value;
      auto v = w.to_vector<float>();
      v[0] += 1e-6f;  // one element, one ulp-scale change
      w.copy_from(Tensor::from_vector(v, w.shape(), w.device()));
    }
    CHECK_FALSE(ddp.weights_identical_across_ranks());
  }
}

TEST_CASE("no_sync: accumulating 2 micro-batches equals one step on the combined batch") {
  auto& c = ddp_test::comm();
  const std::int64_t per = kGlobalBatch / c.size(), begin = c.rank() * per, half = per / 2;
  par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm());
  optim::SGD opt(ddp.parameters(), sgd());
  const int steps = 5;
  for (int s = 0; s < steps; ++s) {
    ddp.zero_grad();
    {
      auto guard = ddp.no_sync();
      forward_backward(ddp, batch(dataset(), s, begin, begin + half), 0.5f);
    }
    forward_backward(ddp, batch(dataset(), s, begin + half, begin + per), 0.5f);
    opt.step();
  }
  if (c.size() > 1) CHECK(ddp.stats().steps == steps);  // one all-reduce round per step, not two
  auto ref = reference(steps);
  const double rel = max_relative_difference(ddp.module(), *ref);
  MESSAGE("no_sync: max relative difference " << rel);
  CHECK(rel <= 1e-5);
  CHECK(ddp.weights_identical_across_ranks());
}

TEST_CASE("deterministic mode: bit-identical to a fixed-order local reference on every backend") {
  auto& c = ddp_test::comm();
  par::DDPOptions o;
  o.deterministic = true;
  par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm(), o);
  const int steps = 5;
  train_ddp(ddp, steps);
  // The same arithmetic done locally: every rank's gradient on its share, summed in the given
  // rank order in f32, divided by n. Equal digests for shm and ucx mean the backend's reduction
  // order played no part.
  const std::int64_t n = c.size(), per = kGlobalBatch / n;
  auto reference_in_order = [&](const std::vector<std::int64_t>& order) {
    auto m = small_net(1);
    optim::SGD opt(m->parameters(), sgd());
    for (int s = 0; s < steps; ++s) {
      std::vector<std::vector<float>> sum;
      for (std::int64_t r : order) {
        m->zero_grad();
        forward_backward(*m, batch(dataset(), s, r * per, (r + 1) * per));
        auto ps = m->parameters();
        for (std::size_t i = 0; i < ps.size(); ++i) {
          auto g = ps[i]->grad.to_vector<float>();
          if (sum.size() <= i) {
            sum.push_back(g);
          } else {
            for (std::size_t k = 0; k < g.size(); ++k) sum[i][k] += g[k];
          }
        }
      }
      auto ps = m->parameters();
      for (std::size_t i = 0; i < ps.size(); ++i) {
        for (auto& v : sum[i]) v /= static_cast<float>(n);
        ps[i]->grad.copy_from(
            Tensor::from_vector(sum[i], ps[i]->grad.shape(), ps[i]->grad.device()));
      }
      opt.step();
    }
    return m;
  };
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r) order[static_cast<std::size_t>(r)] = r;
  auto m = reference_in_order(order);
  MESSAGE("deterministic digest on " << c.backend() << ": " << ddp.weights_digest());
  CHECK(ddp.weights_digest() == par::weights_digest(*m));
  CHECK(ddp.weights_identical_across_ranks());
  // With 2 ranks (a + b) / 2 is the same in any order and the check above cannot fail; from 3
  // ranks on, these gradients sum differently in another order (checked here, so that the
  // equality above means something): the ctest entries run this case at 3 and 4 ranks too.
  if (n >= 3) {
    std::vector<std::int64_t> reversed(order.rbegin(), order.rend());
    CHECK(par::weights_digest(*reference_in_order(reversed)) != par::weights_digest(*m));
  }
}

TEST_CASE("gradient_as_bucket_view: gradients live in the bucket; off, replaced or after DDP, same training") {
  auto& c = ddp_test::comm();
  const auto ref = reference(kSteps);
  auto addr = [](const auto& p) { return static_cast<const char*>(p->grad.raw()); };
  auto slot = [](const auto& p) { return (p->grad.nbytes() + 255) / 256 * 256; };
  {  // On (the default): one bucket here, members packed in reverse registration order, each at
     // a 256-byte boundary (review finding G5).
    auto model = small_net(1);
    par::DistributedDataParallel ddp(model, ddp_test::shared_comm());
    const auto ps = model->parameters();
    REQUIRE(ps.size() == 4);  // conv.weight, conv.bias, fc.weight, fc.bias
    for (std::size_t i = ps.size() - 1; i > 0; --i)
      CHECK(addr(ps[i - 1]) == addr(ps[i]) + slot(ps[i]));
    train_ddp(ddp, kSteps);
    CHECK(max_relative_difference(ddp.module(), *ref) <= 1e-5);
  }
  {  // Off: gradients keep their own memory (not packed), same result.
    auto model = small_net(1);
    par::DDPOptions o;
    o.gradient_as_bucket_view = false;
    par::DistributedDataParallel ddp(model, ddp_test::shared_comm(), o);
    const auto ps = model->parameters();
    CHECK(addr(ps[2]) != addr(ps[3]) + slot(ps[3]));
    train_ddp(ddp, kSteps);
    CHECK(max_relative_difference(ddp.module(), *ref) <= 1e-5);
  }
  {  // A gradient replaced after construction is copied in and out instead: nothing is lost.
    auto model = small_net(1);
    par::DistributedDataParallel ddp(model, ddp_test::shared_comm());
    const auto ps = model->parameters();
    ps[2]->grad = Tensor::zeros(ps[2]->value.shape(), cohort::DType::f32, ps[2]->value.device());
    train_ddp(ddp, kSteps);
    CHECK(max_relative_difference(ddp.module(), *ref) <= 1e-5);
  }
  {  // After the DDP module is gone, the model's gradients have memory of their own, same values.
    auto model = small_net(1);
    std::vector<std::vector<float>> before;
    std::vector<const char*> where;
    {
      par::DistributedDataParallel ddp(model, ddp_test::shared_comm());
      train_ddp(ddp, 2);
      for (const auto& p : model->parameters()) {
        before.push_back(p->grad.to_vector<float>());
        where.push_back(addr(p));
      }
    }
    const auto ps = model->parameters();
    for (std::size_t i = 0; i < ps.size(); ++i) {
      CHECK(addr(ps[i]) != where[i]);
      CHECK(ps[i]->grad.to_vector<float>() == before[i]);
    }
  }
  MESSAGE("gradient_as_bucket_view on " << c.size() << " ranks: checked");
}

TEST_CASE("bf16 compression stays close to fp32") {
  auto& c = ddp_test::comm();
  par::DDPOptions o;
  o.bf16_compression = true;
  par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm(), o);
  train_ddp(ddp, kSteps);
  auto ref = reference(kSteps);
  const double rel = max_relative_difference(ddp.module(), *ref);
  MESSAGE("bf16 on " << c.size() << " ranks: max relative difference " << rel);
  CHECK(rel <= 5e-3);                // bf16 keeps 8 significant bits per gradient element
  if (c.size() > 1) CHECK(rel > 0);  // compression really happened
  CHECK(ddp.weights_identical_across_ranks());
}

TEST_CASE("f16 compression stays closer to fp32 than bf16") {
  auto& c = ddp_test::comm();
  par::DDPOptions o;
  o.f16_compression = true;
  auto model = small_net(1);
  par::DistributedDataParallel ddp(model, ddp_test::shared_comm(), o);
  // The compressed reducers keep a flat f32 bucket too: the gradients are views into it.
  const auto ps = model->parameters();
  for (std::size_t i = ps.size() - 1; i > 0; --i)
    CHECK(static_cast<const char*>(ps[i - 1]->grad.raw()) ==
          static_cast<const char*>(ps[i]->grad.raw()) + (ps[i]->grad.nbytes() + 255) / 256 * 256);
  train_ddp(ddp, kSteps);
  auto ref = reference(kSteps);
  const double rel = max_relative_difference(ddp.module(), *ref);
  MESSAGE("f16 on " << c.size() << " ranks: max relative difference " << rel);
  // f16 keeps 11 significant bits to bf16's 8: on 2 ranks 7.3e-5 here against bf16's 4.6e-4, so
  // this bound also fails if the f16 option silently ran bf16.
  CHECK(rel <= 2e-4);
  if (c.size() > 1) CHECK(rel > 0);  // compression really happened (1 rank never communicates)
  CHECK(ddp.weights_identical_across_ranks());
}

// Issue 33: DDP's reducers composed with loss scaling. The last rank's batch holds an inf at step
// 3; its gradients go non-finite, the all-reduce (f32, bf16 or f16 on the wire: no error feedback
// to carry the inf into later steps) spreads that to every rank, and every rank's GradScaler
// skips exactly that step and halves its scale, as PyTorch's GradScaler does under DDP. The
// initial scale is 256 so that no other step overflows f16's range (65504).
TEST_CASE("GradScaler under DDP: an inf on one rank skips that step on every rank, any reducer") {
  auto& c = ddp_test::comm();
  for (const char* wire : {"f32", "bf16", "f16"}) {
    CAPTURE(wire);
    par::DDPOptions o;
    o.bf16_compression = std::string(wire) == "bf16";
    o.f16_compression = std::string(wire) == "f16";
    par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm(), o);
    optim::SGD opt(ddp.parameters(), sgd());
    optim::GradScalerOptions so;
    so.init_scale = 256;
    optim::GradScaler scaler(so);
    const std::int64_t per = kGlobalBatch / c.size(), begin = c.rank() * per;
    constexpr int kBad = 3;
    std::vector<bool> stepped;
    std::vector<double> scales;
    for (int s = 0; s < 6; ++s) {
      Batch b = batch(dataset(), s, begin, begin + per);
      if (s == kBad && c.rank() == c.size() - 1) {
        std::vector<float> x = b.x.to_vector<float>();
        x[5] = INFINITY;
        b.x = Tensor::from_vector(x, b.x.shape(), b.x.device());
      }
      const auto before = ddp.module().state_dict();
      std::vector<std::vector<float>> kept;
      for (const auto& e : before) kept.push_back(e.tensor.to_vector<float>());
      ddp.zero_grad();
      forward_backward(ddp, b, scaler.scale());
      stepped.push_back(scaler.step(opt));
      scaler.update();
      scales.push_back(scaler.scale());
      if (s == kBad) {  // nothing moved on the skipped step
        const auto after = ddp.module().state_dict();
        for (std::size_t i = 0; i < after.size(); ++i)
          CHECK(after[i].tensor.to_vector<float>() == kept[i]);
      }
    }
    CHECK(stepped == std::vector<bool>{true, true, true, false, true, true});
    CHECK(scales == std::vector<double>{256, 256, 256, 128, 128, 128});
    CHECK(scaler.skipped_steps() == 1);
    CHECK(ddp.weights_identical_across_ranks());
    for (const auto& e : ddp.module().state_dict())
      for (float v : e.tensor.to_vector<float>()) REQUIRE(std::isfinite(v));
  }
}

TEST_CASE("buckets: a tiny cap gives several buckets, issued in reverse registration order") {
  auto& c = ddp_test::comm();
  par::DDPOptions o;
  o.bucket_cap_mb = 200.0 / (1024 * 1024);   // 200 bytes: 50 floats
  o.first_bucket_mb = 50.0 / (1024 * 1024);  // 50 bytes: fc.bias (10 floats) alone
  par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm(), o);
  const auto layout = ddp.bucket_layout();
  // Parameters: conv.weight (36), conv.bias (4), fc.weight (360), fc.bias (10), registered in
  // that order; buckets take them in reverse.
  REQUIRE(layout.size() == 3);
  CHECK(layout[0] == std::vector<std::string>{"fc.bias"});
  CHECK(layout[1] == std::vector<std::string>{"fc.weight"});  // over the cap: alone
  CHECK(layout[2] == std::vector<std::string>{"conv.bias", "conv.weight"});
  train_ddp(ddp, 3);
  if (c.size() > 1) {
    CHECK(ddp.last_ready_order() ==
          std::vector<std::string>{"fc.bias", "fc.weight", "conv.bias", "conv.weight"});
    CHECK(ddp.last_step().buckets == 3);
    CHECK(ddp.stats().allreduce_s > 0);  // summed over 3 steps: microsecond clock
    CHECK(ddp.last_step().comm_wait_s >= 0);
    CHECK(ddp.last_step().overlap_s >= 0);
    CHECK(ddp.last_step().overlap_s <= ddp.last_step().allreduce_s);
  }
  auto ref = reference(3);
  CHECK(max_relative_difference(ddp.module(), *ref) <= 1e-5);
}

TEST_CASE("mismatch: a rank with a different model is named with the parameter and both shapes") {
  auto& c = ddp_test::comm();
  if (c.size() == 1) return;  // nothing to differ from
  const std::int64_t out = c.rank() == 1 ? 12 : 10;
  std::string what = "<no error>";
  try {
    par::DistributedDataParallel ddp(small_net(1, out), ddp_test::shared_comm());
  } catch (const cohort::Error& e) {
    what = e.what();
  }
  MESSAGE(what);
  // Every rank raises the same error (nobody is left waiting in a collective).
  CHECK(what.find("'fc.weight' [10, 36] on rank 0, 'fc.weight' [12, 36] on rank 1") !=
        std::string::npos);
  CHECK(what.find("parameter #2") != std::string::npos);
  // The communicator is still usable afterwards.
  par::DistributedDataParallel ok(small_net(1), ddp_test::shared_comm());
  CHECK(ok.weights_identical_across_ranks());
}

TEST_CASE("buffers: batch-norm running stats follow rank 0 (sync_buffers and forward)") {
  auto& c = ddp_test::comm();
  auto& dev = ddp_test::test_device();
  auto make = [&] {
    nn::manual_seed(1);
    return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
        {"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
        {"bn", nn::make<nn::BatchNorm2d>(4, dev)},
        {"flatten", nn::make<nn::Flatten>()}});
  };
  par::DistributedDataParallel ddp(make(), ddp_test::shared_comm());
  const std::int64_t per = kGlobalBatch / c.size(), begin = c.rank() * per;
  // Each rank's own data moves its running statistics away from the others'.
  ddp.module().forward(batch(dataset(), 0, begin, begin + per).x);
  if (c.size() > 1) CHECK_FALSE(ddp.weights_identical_across_ranks());
  ddp.sync_buffers();
  CHECK(ddp.weights_identical_across_ranks());
  // Rank 0's statistics are the ones kept: equal to a local model that saw rank 0's data.
  auto local = make();
  local->forward(batch(dataset(), 0, 0, per).x);
  CHECK(ddp.weights_digest() == par::weights_digest(*local));
  // forward() syncs rank 0's buffers first (broadcast_buffers): after diverging again, one
  // ddp.forward on the same batch everywhere leaves every rank with identical statistics.
  ddp.module().forward(batch(dataset(), 1, begin, begin + per).x);
  ddp.forward(batch(dataset(), 2, 0, per).x);  // same data on every rank
  CHECK(ddp.weights_identical_across_ranks());
}

TEST_CASE("trace: bucket all-reduces and the wait appear as spans on the 'comm' track") {
  auto& c = ddp_test::comm();
  if (c.size() == 1) return;  // world size 1 never communicates
  cohort::trace::clear();
  cohort::trace::enable(true);
  {
    par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm());
    train_ddp(ddp, 1);
  }
  cohort::trace::enable(false);
  const auto path = std::filesystem::temp_directory_path() /
                    ("cohort_ddp_trace_" + std::to_string(::getpid()) + ".json");
  cohort::trace::write_chrome_trace(path.string());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  cohort::trace::clear();
  CHECK(text.str().find("\"comm\"") != std::string::npos);
  CHECK(text.str().find("allreduce bucket") != std::string::npos);
  CHECK(text.str().find("ddp wait") != std::string::npos);
}

namespace {
// conv -> bn1 -> relu -> conv -> bn2 -> flatten: two batch norms, six buffers.
nn::ModulePtr two_bn_net() {
  auto& dev = ddp_test::test_device();
  nn::manual_seed(1);
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
      {"bn1", nn::make<nn::BatchNorm2d>(4, dev)},
      {"relu", nn::make<nn::ReLU>()},
      {"conv2", nn::make<nn::Conv2d>(nn::Conv2dOptions(4, 4, 3), dev)},
      {"bn2", nn::make<nn::BatchNorm2d>(4, dev)},
      {"flatten", nn::make<nn::Flatten>()}});
}
}  // namespace

TEST_CASE("module: DDP is an nn::Module with exactly the wrapped model's names") {
  auto model = small_net(1);
  auto ddp = nn::make<par::DistributedDataParallel>(model, ddp_test::shared_comm());
  nn::ModulePtr as_module = ddp;  // goes wherever a model goes
  const auto a = as_module->state_dict(), b = model->state_dict();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].name == b[i].name);
  CHECK(as_module->named_parameters().front().name == "conv.weight");
  CHECK(as_module->parameters().front() == model->parameters().front());  // the same Parameter
  CHECK(as_module->summary({2, 1, 8, 8}) == model->summary({2, 1, 8, 8}));
  CHECK(as_module->output_shape({2, 1, 8, 8}) == cohort::Shape{2, 10});
  // Its state_dict loads into the plain model (a checkpoint of either serves both).
  auto plain = small_net(7);
  plain->load_state_dict(as_module->state_dict());
  CHECK(par::weights_digest(*plain) == ddp->weights_digest());
  // train()/eval() reach the wrapped model.
  as_module->eval();
  CHECK_FALSE(model->is_training());
  as_module->train();
  CHECK(model->is_training());
}

TEST_CASE("reducers: one per bucket, picked from the options and the communicator") {
  auto reducers = [](par::DDPOptions o) {
    par::DistributedDataParallel ddp(small_net(1), ddp_test::shared_comm(), o);
    return ddp.bucket_reducers();
  };
  par::DDPOptions o;
  CHECK(reducers(o) == std::vector<std::string>{"plain"});  // host memory: every backend takes it
  o.deterministic = true;
  CHECK(reducers(o) == std::vector<std::string>{"deterministic"});
  o.deterministic = false;
  o.bf16_compression = true;
  CHECK(reducers(o) == std::vector<std::string>{"bf16"});
  o.bf16_compression = false;
  o.f16_compression = true;
  CHECK(reducers(o) == std::vector<std::string>{"f16"});
  o.bf16_compression = true;  // both: an error that names them
  CHECK_THROWS_WITH_AS(reducers(o), doctest::Contains("bf16_compression and f16_compression are both set"),
                       cohort::Error);
}

TEST_CASE("buffers: one broadcast per training forward with buffers, none without") {
  auto& c = ddp_test::comm();
  if (c.size() == 1) return;  // world size 1 never communicates
  const std::int64_t per = kGlobalBatch / c.size(), begin = c.rank() * per;
  const Batch b = batch(dataset(), 0, begin, begin + per);
  {
    auto counting = std::make_shared<CountingComm>(ddp_test::shared_comm());
    par::DistributedDataParallel ddp(two_bn_net(), counting);
    CHECK(counting->broadcasts == 2);  // construction: all parameters, then all buffers
    counting->broadcasts = 0;
    ddp.forward(b.x);
    CHECK(counting->broadcasts == 1);  // six buffers of two batch norms, one collective
    ddp.eval();
    ddp.forward(b.x);  // eval: no communication (rank 0 may evaluate alone)
    ddp.train();
    {
      auto guard = ddp.no_sync();
      ddp.forward(b.x);  // no_sync: no communication
    }
    CHECK(counting->broadcasts == 1);
    CHECK(counting->allreduces == 0);
  }
  {
    auto counting = std::make_shared<CountingComm>(ddp_test::shared_comm());
    par::DistributedDataParallel ddp(small_net(1), counting);
    CHECK(counting->broadcasts == 1);  // parameters only: the model has no buffers
    counting->broadcasts = 0;
    forward_backward(ddp, b);
    CHECK(counting->broadcasts == 0);
    CHECK(counting->allreduces == 1);  // one bucket
  }
}

TEST_CASE("trainer: the DDP module goes to the Trainer like a model, accumulation uses no_sync") {
  auto& c = ddp_test::comm();
  auto& dev = cohort::host_device();
  auto model = nn::make<par::DistributedDataParallel>(
      small_net(1 + static_cast<std::uint64_t>(c.rank()), 10, dev), ddp_test::shared_comm());
  auto ds = std::make_shared<cohort::data::SyntheticDataset>(512, cohort::Shape{1, 8, 8}, 10, 5);
  cohort::data::DataLoaderOptions lo;
  lo.batch_size = 16;
  lo.rank = c.rank();
  lo.world_size = c.size();
  cohort::data::DataLoader loader(ds, lo, {}, dev);
  optim::SGD opt(model->parameters(), sgd());
  nn::NLLLoss loss;
  cohort::train::TrainerOptions to;
  to.accumulation = 2;
  to.show_progress = false;
  to.world_size = c.size();
  cohort::train::Trainer trainer(*model, loss, opt, nullptr, to);
  const auto results = trainer.fit(loader, nullptr);
  REQUIRE(results.size() == 1);
  // One communication round per optimizer step, not one per micro-batch.
  if (c.size() > 1) CHECK(model->stats().steps == results[0].steps);
  CHECK(model->weights_identical_across_ranks());
}
