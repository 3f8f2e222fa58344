// ZeRO stages 1, 2 and 3 (DDPOptions::zero_stage, parallel::make_zero_optimizer), checked against
// DDP itself, the independent reference here: with deterministic reduction the sharded run's
// weights equal a deterministic DDP run's to the last bit (the MNIST net, ResNet9 and the ViT;
// SGD with momentum and weight decay, Adam, AdamW, RMSprop, Adadelta; parameter groups; gradient
// accumulation; 2, 3 and 4 ranks, where most tensors do not split evenly); the plain (backend)
// reduce-scatter stays within f32 rounding of DDP; the bytes each rank sends per step are
// 2 (n-1)/n of the buckets, as DDP's all-reduce (3 at stage 3: each unit gathered in forward and
// in backward); the optimizer state the host allocator holds is 1/n of DDP's, and at stage 2 the
// gradients' too, between steps and at backward's peak; clip_grad_norm over the shards (DDP's
// norms and bits; error_if_nonfinite on every rank) and a GradScaler whose skipped steps are
// agreed over the ranks; bad input. Stage 3's own checks (units, memory, gathers) are in
// test_zero3.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers.hpp"
#include "cohort/models.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/zero.hpp"
#include "zero_fixture.hpp"

namespace {
using namespace zero_test;
}  // namespace

TEST_CASE("ZeRO stages 1-3: bit-identical to deterministic DDP, every optimizer, MNIST net") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int stage : {1, 2, 3}) {
    for (const auto& [what, make] : optimizers()) {
      CAPTURE(stage);
      CAPTURE(what);
      const auto [ddp, zero] = ddp_and_zero(mnist, make, 3, 4, stage);
      CHECK(ddp == zero);
    }
  }
}

TEST_CASE("ZeRO stages 1-3: bit-identical to deterministic DDP, ResNet9 and the ViT (Adam)") {
  const auto adam = optimizers()[1].second;
  for (const int stage : {1, 2, 3}) {
    for (const ModelCase& mc :
         {ModelCase{"resnet9", Shape{3, 16, 16}}, ModelCase{"vit", Shape{3, 32, 32}}}) {
      CAPTURE(stage);
      CAPTURE(mc.name);
      const auto [ddp, zero] = ddp_and_zero(mc, adam, 2, 2, stage);
      CHECK(ddp == zero);
    }
  }
}

TEST_CASE("ZeRO stages 1-3: gradient accumulation (no_sync) is DDP's to the bit") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const auto sgd = optimizers()[0].second;
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    const auto [ddp, zero] = ddp_and_zero(mnist, sgd, 2, 2, stage, 3);
    CHECK(ddp == zero);
  }
}

TEST_CASE("ZeRO stages 1-3: the plain reduce-scatter stays within f32 rounding of DDP") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    par::DDPOptions o;
    o.bucket_cap_mb = 0.05;
    auto ddp =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 3), ddp_test::shared_comm(), o);
    optim::SGDOptions so;
    so.lr = 0.05;
    so.momentum = 0.9;
    optim::SGD opt(par::trainable_parameters(ddp->module()), so);
    train(*ddp, opt, mnist, 3, 4);
    o.zero_stage = stage;
    auto zero =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 3), ddp_test::shared_comm(), o);
    auto zopt = par::make_zero_optimizer<optim::SGD>(*zero, so);
    train(*zero, *zopt, mnist, 3, 4);
    CHECK(zero->bucket_reducers().front() == "sharded");
    CHECK(zero->weights_identical_across_ranks());
    const auto whole = zero->summon_full_params(false);  // stage 3: the values are gathered
    const double worst = worst_relative_difference(ddp->module(), zero->module());
    MESSAGE("plain ZeRO vs DDP, worst relative difference after 3 steps: " << worst);
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("ZeRO stages 1-3: parameter groups (weight decay per group) shard like the model") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    // Biases (1-D) without weight decay, the rest with. The split is taken on the full parameters
    // and carried to the shards: shard_parameters keeps their order and count.
    const auto grouped =
        [](const std::vector<ParameterPtr>& full,
           const std::function<std::vector<ParameterPtr>(const std::vector<ParameterPtr>&)>&
               shard) {
          std::vector<ParameterPtr> decay, no_decay;
          for (const auto& p : full) (p->value.shape().rank() == 1 ? no_decay : decay).push_back(p);
          optim::SGDOptions o;
          o.lr = 0.05;
          o.momentum = 0.9;
          o.weight_decay = 0.01;
          auto opt = std::make_unique<optim::SGD>(shard(decay), o);
          o.weight_decay = 0;
          opt->add_param_group(shard(no_decay), o);
          return opt;
        };
    par::DDPOptions o;
    o.deterministic = true;
    o.bucket_cap_mb = 0.05;
    auto ddp =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 5), ddp_test::shared_comm(), o);
    auto opt = grouped(par::trainable_parameters(ddp->module()),
                       [](const std::vector<ParameterPtr>& ps) { return ps; });
    train(*ddp, *opt, mnist, 3, 4);
    o.zero_stage = stage;
    auto zero =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 5), ddp_test::shared_comm(), o);
    auto zopt =
        grouped(par::trainable_parameters(zero->module()),
                [&](const std::vector<ParameterPtr>& ps) { return zero->shard_parameters(ps); });
    zero->attach_optimizer(*zopt);
    train(*zero, *zopt, mnist, 3, 4);
    CHECK(zopt->num_param_groups() == 2);
    CHECK(zero->weights_digest() == ddp->weights_digest());
  }
}

TEST_CASE(
    "ZeRO stages 1-3: each rank sends 2 (3 at stage 3) (n-1)/n of the buckets a step; state is "
    "1/n") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  auto& dev = ddp_test::test_device();
  const int n = ddp_test::comm().size();
  std::int64_t params = 0;
  for (const auto& p : make_model(mnist, 1)->named_parameters()) params += p.param->value.numel();
  for (const int stage : {1, 2, 3})
    for (const bool deterministic : {false, true}) {
      CAPTURE(stage);
      CAPTURE(deterministic);
      auto counting = std::make_shared<ByteCountingComm>(ddp_test::shared_comm());
      par::DDPOptions o;
      o.zero_stage = stage;
      o.deterministic = deterministic;
      auto zero = nn::make<par::DistributedDataParallel>(make_model(mnist, 1), counting, o);
      // Padding: every parameter starts 256-byte aligned in its bucket, every bucket rounds up to
      // a multiple of n elements.
      const std::int64_t e = zero->bucket_elements();
      CHECK(e >= params);
      CHECK(e <= params + 64 * 16 + 16 * n);
      CHECK(zero->owned_elements() * n == e);
      optim::AdamOptions ao;
      auto opt = par::make_zero_optimizer<optim::Adam>(*zero, ao);
      std::int64_t piece_elements = 0;
      for (const auto& p : opt->params()) piece_elements += p->value.numel();
      CHECK(piece_elements <= zero->owned_elements());
      counting->sent = 0;  // from here: one step's traffic (the constructor's checks before)
      counting->reduce_scatters = counting->allgathers = counting->allreduces = counting->sends = 0;
      nn::CrossEntropyLoss loss;
      auto [x, y] = batch_of(mnist, 0, counting->rank(), 4, n);
      loss.forward(zero->forward(x), y);
      zero->backward(loss.backward(), false);
      // Adam's exp_avg and exp_avg_sq, created by the first step for the owned elements only: what
      // the host allocator holds more after it (the step's temporaries are freed, the all-gather
      // writes into the buckets) is 1/n of DDP's state.
      const std::size_t before = dev.memory_stats().bytes_in_use;
      opt->step();
      const double state = static_cast<double>(dev.memory_stats().bytes_in_use - before);
      const double per_step = counting->sent;
      MESSAGE("n=" << n << ": sent " << per_step << " elements (buckets " << e << "), Adam state "
                   << state << " B for " << piece_elements << " owned of " << params);
      // Stage 3 gathers every unit twice (forward, backward): the net's parameters all lie in
      // units (conv1, conv2, fc1, fc2), so no root unit is kept through the step.
      const int gathers = stage == 3 ? 2 : 1;
      if (stage == 3) CHECK(zero->shard_unit_layout().back().first != "");
      CHECK(per_step == doctest::Approx((gathers + 1.0) * (n - 1) / n * static_cast<double>(e)));
      // Plain: the backend's reduce-scatter; deterministic: a send of each chunk to its owner.
      CHECK(counting->reduce_scatters ==
            (deterministic || n == 1 ? 0 : counting->allgathers / gathers));
      CHECK(counting->sends == (deterministic ? (n - 1) * counting->allgathers / gathers : 0));
      CHECK(counting->allreduces == 0);
      CHECK(state <= 8.0 * static_cast<double>(piece_elements) * 1.02 + 1024 * 1024);
      CHECK(state >= 8.0 * static_cast<double>(piece_elements) * 0.98);
    }
}

TEST_CASE("ZeRO stage 2: no whole gradient between steps; backward's peak is a few buckets") {
  // 24 Linear(128, 128) + ReLU in buckets of 0.1 MiB: the whole gradient is many buckets, so
  // holding it (stage 1) and holding a few of them (stage 2) differ by far more than noise.
  auto& dev = ddp_test::test_device();
  const int n = ddp_test::comm().size(), rank = ddp_test::comm().rank();
  const auto make_mlp = [&] { return deep_mlp(dev); };
  const auto batch = deep_mlp_batch(dev, rank);
  const Tensor &x = batch.first, &y = batch.second;

  // The model alone (its gradients allocated before backward): backward's own memory, the
  // activations' gradients and the kernels' workspace.
  double extra[3] = {0, 0, 0}, peak[3] = {0, 0, 0};  // by stage (0: no DDP)
  {
    auto alone = make_mlp();
    nn::CrossEntropyLoss loss;
    loss.forward(alone->forward(x), y);
    const std::size_t forward_done = dev.memory_stats().bytes_in_use;
    dev.reset_peak_memory_stats();
    alone->backward(loss.backward(), false);
    extra[0] =
        static_cast<double>(dev.memory_stats().peak_in_use) - static_cast<double>(forward_done);
  }
  double whole = 0, owned = 0, biggest_bucket = 0;
  for (const int stage : {1, 2}) {
    CAPTURE(stage);
    auto model = make_mlp();
    whole = 0;
    std::map<std::string, double> bytes;
    for (const auto& p : model->named_parameters()) {
      bytes[p.name] = 4.0 * static_cast<double>(p.param->value.numel());
      whole += bytes[p.name];
    }
    par::DDPOptions o;
    o.zero_stage = stage;
    o.deterministic = true;  // its scratch is (n-1)/n of a bucket, the plain one's 1/n
    o.bucket_cap_mb = o.first_bucket_mb = 0.1;
    const std::size_t with_grads = dev.memory_stats().bytes_in_use;
    auto zero = nn::make<par::DistributedDataParallel>(model, ddp_test::shared_comm(), o);
    const std::size_t built = dev.memory_stats().bytes_in_use;
    owned = 4.0 * static_cast<double>(zero->owned_elements());
    biggest_bucket = 0;
    for (const auto& names : zero->bucket_layout()) {
      double b = 0;
      for (const auto& name : names) b += bytes.at(name) + 256;  // + its alignment padding
      biggest_bucket = std::max(biggest_bucket, b + 4.0 * n);
    }
    if (stage == 2 && n > 1) {  // the model's own gradients went (every one), the shards came
      CHECK(static_cast<double>(with_grads) - static_cast<double>(built) ==
            doctest::Approx(whole - owned).epsilon(0.01));
    }
    auto opt = par::make_zero_optimizer<optim::Adam>(*zero, optim::AdamOptions{});
    std::int64_t pieces = 0;
    for (const auto& p : opt->params()) pieces += p->value.numel();
    nn::CrossEntropyLoss loss;
    std::size_t after_first = 0;
    for (int s = 0; s < 3; ++s) {
      opt->zero_grad();
      const std::size_t start = dev.memory_stats().bytes_in_use;
      loss.forward(zero->forward(x), y);
      const std::size_t forward_done = dev.memory_stats().bytes_in_use;
      dev.reset_peak_memory_stats();
      zero->backward(loss.backward(), false);
      const double high = static_cast<double>(dev.memory_stats().peak_in_use);
      extra[stage] = high - static_cast<double>(forward_done);
      peak[stage] = high;
      if (stage == 2 && n > 1)
        for (const auto& p : zero->module().named_parameters())
          CHECK_MESSAGE(!p.param->grad.defined(),
                        p.name << " keeps a whole gradient after backward");
      opt->step();
      const std::size_t end = dev.memory_stats().bytes_in_use;
      if (s == 0) {  // Adam's state for the owned elements, nothing else
        after_first = end;
        // Two tensors per piece, each rounded up by the allocator (up to 512 B).
        const double state = static_cast<double>(end - start), exact = 8.0 * pieces;
        MESSAGE("stage " << stage << ": the first step added " << state << " B for " << pieces
                         << " owned elements");
        CHECK(state >= exact);
        CHECK(state <= exact + 2.0 * 512 * static_cast<double>(opt->params().size()));
      } else {
        CHECK(end == after_first);  // steady: nothing grows from step to step
      }
    }
  }
  // The same model, batch and kernels: what stage 2's backward holds above the model alone's is
  // the gradient memory alive at its peak (buckets and their scratch).
  const double live = extra[2] - extra[0];
  MESSAGE("n=" << n << ": gradients " << whole << " B, owned shard " << owned
               << " B, biggest bucket " << biggest_bucket << " B; backward's peak above the "
               << "forward's: model alone " << extra[0] << " B, stage 1 " << extra[1]
               << " B, stage 2 " << extra[2] << " B; peaks " << peak[1] << " and " << peak[2]
               << " B");
  if (n == 1) {  // one rank: stage 1's layout, nothing released
    CHECK(extra[2] == extra[1]);
    return;
  }
  // Two issued buckets not yet given back, each with its scratch (at most (n-1)/n more), and one
  // being filled.
  CHECK(live <= 5 * biggest_bucket);
  CHECK(live < 0.5 * whole);
}

// The MNIST net under ZeRO `stage` (buckets of 0.05 MiB) with SGD lr 0.05 over its pieces.
struct ShardedSGD {
  ShardedSGD(const ModelCase& mc, int stage) {
    par::DDPOptions o;
    o.zero_stage = stage;
    o.bucket_cap_mb = 0.05;
    o.first_bucket_mb = 0.01;
    ddp = nn::make<par::DistributedDataParallel>(make_model(mc, 7), ddp_test::shared_comm(), o);
    pieces = ddp->shard_parameters(par::trainable_parameters(ddp->module()));
    optim::SGDOptions so;
    so.lr = 0.05;
    opt = std::make_unique<optim::SGD>(pieces, so);
    ddp->attach_optimizer(*opt);
  }
  std::shared_ptr<par::DistributedDataParallel> ddp;
  std::vector<ParameterPtr> pieces;
  std::unique_ptr<optim::SGD> opt;
};

// Clipping (DistributedDataParallel::clip_grad_norm, FSDP's clip_grad_norm_): DDP's norm of the
// whole averaged gradient (nn::clip_grad_norm, itself checked against torch in the layers' tests)
// is the reference. Each rank's partial norm is over its own pieces: the infinity norm is a max
// (exact in any order); p = 1 and p = 2 sum in double on the host, where the order changes the
// total by ~1e-16 relative. The f32 coefficient is then DDP's unless the total lies that close
// to an f32 rounding boundary, and the weights are DDP's bits.
TEST_CASE("ZeRO stages 1-3: clip_grad_norm is DDP's, the norm over every rank's shard") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const auto sgd = optimizers()[0].second;
  const double inf = std::numeric_limits<double>::infinity();
  for (const int stage : {1, 2, 3}) {
    // Stage 1's pieces are stage 2's (only where the averaged gradient lives differs): the norm
    // types once, at stage 2.
    const std::vector<double> norms = stage == 1 ? std::vector<double>{2.0}
                                                 : std::vector<double>{2.0, inf, 1.0};
    for (const double p : norms) {
      CAPTURE(stage);
      CAPTURE(p);
      const double max_norm = std::isinf(p) ? 1e-3 : 0.05;  // below every step's norm: it clips
      par::DDPOptions o;
      o.deterministic = true;
      o.bucket_cap_mb = 0.05;
      o.first_bucket_mb = 0.01;
      auto ddp = nn::make<par::DistributedDataParallel>(make_model(mnist, 7), ddp_test::shared_comm(), o);
      auto opt = sgd(par::trainable_parameters(ddp->module()));
      std::vector<double> want, got;
      train(*ddp, *opt, mnist, 3, 4, 1, [&] { want.push_back(ddp->clip_grad_norm(max_norm, p)); });
      o.zero_stage = stage;
      auto zero = nn::make<par::DistributedDataParallel>(make_model(mnist, 7), ddp_test::shared_comm(), o);
      auto zopt = sgd(zero->shard_parameters(par::trainable_parameters(zero->module())));
      zero->attach_optimizer(*zopt);
      // What a user who clips the optimizer's parameters by hand gets: this rank's shard only.
      double shard_only = 0;
      train(*zero, *zopt, mnist, 3, 4, 1, [&] {
        if (got.empty()) {
          std::vector<ParameterPtr> pieces;
          for (std::size_t g = 0; g < zopt->num_param_groups(); ++g)
            for (const auto& q : zopt->params(g)) pieces.push_back(q);
          shard_only = nn::clip_grad_norm(pieces, 1e30, p);  // 1e30: measures, does not clip
        }
        got.push_back(zero->clip_grad_norm(max_norm, p));
      });
      REQUIRE(got.size() == want.size());
      for (std::size_t k = 0; k < want.size(); ++k) {
        CHECK(want[k] > max_norm);
        CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-12));
        if (std::isinf(p)) CHECK(got[k] == want[k]);  // a max is exact in any order
      }
      if (ddp->communicator().size() > 1 && !std::isinf(p)) CHECK(shard_only < want[0]);
      CHECK(ddp->weights_digest() == zero->weights_digest());
      CHECK(zero->weights_identical_across_ranks());
    }
  }
}

TEST_CASE("ZeRO stages 1-3: clip_grad_norm's error_if_nonfinite on every rank, nothing changed") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    ShardedSGD z(mnist, stage);
    auto& zero = z.ddp;
    auto& pieces = z.pieces;
    auto& c = zero->communicator();
    const int bad_rank = c.size() - 1;
    auto [x, y] = batch_of(mnist, 0, c.rank(), 4, c.size());
    nn::CrossEntropyLoss loss;
    loss.forward(zero->forward(x), y);
    zero->backward(loss.backward(), false);
    // A NaN in the last rank's first non-empty piece only.
    std::size_t at = 0;
    while (pieces[at]->grad.numel() == 0) ++at;
    if (c.rank() == bad_rank) pieces[at]->grad.data<float>()[0] = std::nanf("");
    std::vector<std::vector<float>> before;
    for (const auto& q : pieces) before.push_back(q->grad.to_vector<float>());
    std::string error;
    try {
      zero->clip_grad_norm(0.05, 2.0, true);
    } catch (const cohort::Error& e) {
      error = e.what();
    }
    CAPTURE(error);
    CHECK(error.find("zero_stage " + std::to_string(stage) + ", rank " + std::to_string(c.rank())) !=
          std::string::npos);
    if (c.rank() == bad_rank)
      CHECK(error.find("the first non-finite is parameter " + std::to_string(at)) !=
            std::string::npos);
    else
      CHECK(error.find("every piece this rank holds is finite: another rank's is not") !=
            std::string::npos);
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const auto now = pieces[k]->grad.to_vector<float>();
      REQUIRE(now.size() == before[k].size());  // bytes, not values: the NaN must stay a NaN
      if (!now.empty())
        CHECK(std::memcmp(now.data(), before[k].data(), now.size() * sizeof(float)) == 0);
    }
    // Without error_if_nonfinite every rank scales by NaN, as torch does, and returns NaN.
    CHECK(std::isnan(zero->clip_grad_norm(0.05)));
  }
}

// FSDP's ShardedGradScaler: an inf in one rank's shard makes every rank skip the step.
TEST_CASE("ZeRO stages 1-3: a GradScaler skips the same steps on every rank") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int stage : {1, 2, 3}) {
    CAPTURE(stage);
    ShardedSGD z(mnist, stage);
    auto& zero = z.ddp;
    auto& pieces = z.pieces;
    auto& opt = *z.opt;
    optim::GradScalerOptions go;
    go.init_scale = 1.0;  // the loss is not scaled here: only the verdict is under test
    optim::GradScaler scaler(go), own(go);
    zero->shard_grad_scaler(scaler);
    auto& c = zero->communicator();
    const int bad_rank = c.size() - 1;
    nn::CrossEntropyLoss loss;
    for (int s = 0; s < 3; ++s) {
      CAPTURE(s);
      opt.zero_grad();
      auto [x, y] = batch_of(mnist, s, c.rank(), 4, c.size());
      loss.forward(zero->forward(x), y);
      zero->backward(loss.backward(), false);
      const bool inject = s == 1;
      std::size_t at = pieces.size() - 1;
      while (pieces[at]->grad.numel() == 0) --at;
      if (inject && c.rank() == bad_rank)
        pieces[at]->grad.data<float>()[0] = std::numeric_limits<float>::infinity();
      if (inject) {  // this rank's own verdict differs by rank: agreeing is what the test needs
        own.unscale(opt);
        CHECK(own.found_inf() == (c.rank() == bad_rank));
        own.update();
      }
      const std::string digest = zero->weights_digest();
      const bool stepped = scaler.step(opt);
      scaler.update();
      CHECK(stepped == !inject);
      CHECK(scaler.found_inf() == inject);
      CHECK((zero->weights_digest() == digest) == inject);
      CHECK(zero->weights_identical_across_ranks());
    }
    CHECK(scaler.skipped_steps() == 1);
    CHECK(scaler.scale() == 0.5f);  // backed off once (init 1, backoff 0.5)
  }
}

TEST_CASE("ZeRO: bad input is refused by name") {
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const cohort::Error& e) {
      return e.what();
    }
    return "";
  };
  par::DDPOptions o;
  o.zero_stage = 2;
  o.shard_units = {"conv1"};
  CHECK(error_of([&] {
          par::DistributedDataParallel d(make_model(mnist, 1), ddp_test::shared_comm(), o);
        }).find("shard_units (1 given) are ZeRO stage 3's units; zero_stage is 2") !=
        std::string::npos);
  o.shard_units.clear();
  o.zero_stage = 7;
  CHECK(error_of([&] {
          par::DistributedDataParallel d(make_model(mnist, 1), ddp_test::shared_comm(), o);
        }).find("zero_stage 7 is not a ZeRO stage") != std::string::npos);
  o.zero_stage = 1;
  o.bf16_compression = true;
  CHECK(error_of([&] {
          par::DistributedDataParallel d(make_model(mnist, 1), ddp_test::shared_comm(), o);
        }).find("compression is not supported") != std::string::npos);
  o.bf16_compression = false;
  o.gradient_as_bucket_view = false;
  CHECK(error_of([&] {
          par::DistributedDataParallel d(make_model(mnist, 1), ddp_test::shared_comm(), o);
        }).find("gradient_as_bucket_view=false") != std::string::npos);
  // A parameter that is not the wrapped model's; shard_parameters on plain DDP.
  o.gradient_as_bucket_view = true;
  par::DistributedDataParallel zero(make_model(mnist, 1), ddp_test::shared_comm(), o);
  auto stranger =
      cohort::make_parameter(Tensor::zeros(Shape{3}, cohort::DType::f32, ddp_test::test_device()));
  CHECK(error_of([&] { zero.shard_parameters({stranger}); })
            .find("is not a parameter of the "
                  "wrapped model") != std::string::npos);
  par::DistributedDataParallel plain(make_model(mnist, 1), ddp_test::shared_comm(), {});
  CHECK(error_of([&] {
          plain.shard_parameters(par::trainable_parameters(plain.module()));
        }).find("zero_stage is 0") != std::string::npos);
}
