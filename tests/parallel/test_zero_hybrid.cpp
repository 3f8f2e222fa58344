// Hybrid sharding (DDPOptions::shard_group_size, FSDP's HYBRID_SHARD) checked against DDP, the
// independent reference: with deterministic reduction every shard group size that divides the
// ranks (1: pure replication; at 4 ranks also 2 groups of 2) gives a deterministic DDP's weights
// to the last bit at stages 1-3, the plain reduction stays within f32 rounding, each rank holds
// 1/s of the buckets' state and sends per step what the formula says (inside the shard group
// 2 (s-1)/s of the buckets, across (g-1) chunks); the groups are the ones documented (rank r in
// shard group r / s as its rank r % s); a sharded checkpoint is written by the first shard group
// alone and loads back into every replica; bad sizes are refused by name. comm::make_subgroup
// itself runs the conformance suite (conformance_subgroup_*).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/zero.hpp"
#include "cohort/train/sharded_checkpoint.hpp"
#include "zero_fixture.hpp"

namespace {
using namespace zero_test;

// The shard group sizes below the group's size that divide it: 1 always, 2 at 4 ranks.
std::vector<int> hybrid_sizes(int n) {
  std::vector<int> out;
  for (int s = 1; s < n; ++s)
    if (n % s == 0) out.push_back(s);
  return out;
}
}  // namespace

TEST_CASE("ZeRO hybrid: shard groups of s consecutive ranks, replica groups of equal r % s") {
  const int n = ddp_test::comm().size();
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int s : hybrid_sizes(n)) {
    CAPTURE(s);
    par::DDPOptions o;
    o.zero_stage = 2;
    o.shard_group_size = s;
    auto ddp =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 1), ddp_test::shared_comm(), o);
    const int me = ddp_test::comm().rank();
    REQUIRE(ddp->replica_communicator() != nullptr);
    CHECK(ddp->shard_communicator().size() == s);
    CHECK(ddp->shard_communicator().rank() == me % s);
    CHECK(ddp->replica_communicator()->size() == n / s);
    CHECK(ddp->replica_communicator()->rank() == me / s);
    CHECK(ddp->owned_elements() * s == ddp->bucket_elements());
  }
  // The whole group's size (and 0) is plain sharding: no replica group.
  par::DDPOptions o;
  o.zero_stage = 1;
  o.shard_group_size = n;
  auto whole =
      nn::make<par::DistributedDataParallel>(make_model(mnist, 1), ddp_test::shared_comm(), o);
  CHECK(whole->replica_communicator() == nullptr);
  CHECK(whole->shard_communicator().size() == n);
}

TEST_CASE("ZeRO hybrid: bit-identical to deterministic DDP at every shard group size, stages 1-3") {
  const int n = ddp_test::comm().size();
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  const auto all = optimizers();
  for (const int s : hybrid_sizes(n))
    for (const int stage : {1, 2, 3})
      for (const std::size_t k : {std::size_t{0}, std::size_t{1}}) {  // SGD (momentum), Adam
        CAPTURE(s);
        CAPTURE(stage);
        CAPTURE(all[k].first);
        const auto [ddp, hybrid] = ddp_and_zero(mnist, all[k].second, 3, 4, stage, 1, s);
        CHECK(ddp == hybrid);
      }
  // Batch norm's buffers and accumulation (no_sync) too: ResNet9 at stage 2, two micro-batches.
  for (const int s : hybrid_sizes(n)) {
    CAPTURE(s);
    const auto [ddp, hybrid] =
        ddp_and_zero(ModelCase{"resnet9", Shape{3, 16, 16}}, all[1].second, 2, 2, 2, 2, s);
    CHECK(ddp == hybrid);
  }
}

TEST_CASE("ZeRO hybrid: the plain reduction within f32 rounding of DDP; bytes on the formula") {
  const int n = ddp_test::comm().size();
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int s : hybrid_sizes(n)) {
    CAPTURE(s);
    const int g = n / s;
    par::DDPOptions o;
    auto ddp =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 3), ddp_test::shared_comm(), o);
    optim::SGDOptions so;
    so.lr = 0.05;
    so.momentum = 0.9;
    optim::SGD opt(par::trainable_parameters(ddp->module()), so);
    train(*ddp, opt, mnist, 3, 4);
    auto counting = std::make_shared<ByteCountingComm>(ddp_test::shared_comm());
    o.zero_stage = 1;
    o.shard_group_size = s;
    auto hybrid = nn::make<par::DistributedDataParallel>(make_model(mnist, 3), counting, o);
    auto hopt = par::make_zero_optimizer<optim::SGD>(*hybrid, so);
    counting->sent = 0;
    train(*hybrid, *hopt, mnist, 3, 4);
    // Per step: the reduce-scatter and the all-gather inside the shard group, (s-1) chunks each,
    // and the chunk's all-reduce across, (g-1) chunks (the subgroup's direct algorithm); every
    // one of them a point-to-point message of the parent.
    const double chunk = static_cast<double>(hybrid->owned_elements());
    CHECK(counting->sent == doctest::Approx(3 * (2.0 * (s - 1) + (g - 1)) * chunk));
    CHECK(counting->reduce_scatters == 0);
    CHECK(hybrid->weights_identical_across_ranks());
    const double worst = worst_relative_difference(ddp->module(), hybrid->module());
    MESSAGE("plain hybrid (s=" << s
                               << ") vs DDP, worst relative difference after 3 steps: " << worst);
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("ZeRO hybrid: a sharded checkpoint of s files, loaded back into every replica") {
  const int n = ddp_test::comm().size();
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  for (const int s : hybrid_sizes(n)) {
    CAPTURE(s);
    par::DDPOptions o;
    o.deterministic = true;
    o.zero_stage = 3;
    o.shard_group_size = s;
    auto ddp =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 5), ddp_test::shared_comm(), o);
    auto opt = par::make_zero_optimizer<optim::Adam>(*ddp, optim::AdamOptions{});
    train(*ddp, *opt, mnist, 2, 4);
    const std::string top = shared_dir(ddp_test::comm()), dir = top + "/ckpt";
    cohort::train::TrainingProgress p;
    p.global_step = 2;
    cohort::train::save_sharded_checkpoint(dir, *ddp, *opt, nullptr, p);
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      files += e.path().extension() == ".safetensors";
    CHECK(files == static_cast<std::size_t>(s));
    const std::string saved = ddp->weights_digest();
    // Another run (other seeds) loads it: every replica gets its chunk, the digests are the saved.
    auto other =
        nn::make<par::DistributedDataParallel>(make_model(mnist, 9), ddp_test::shared_comm(), o);
    auto oopt = par::make_zero_optimizer<optim::Adam>(*other, optim::AdamOptions{});
    const auto load = cohort::train::load_sharded_checkpoint(dir, *other, *oopt, nullptr);
    CHECK(load.saved_world_size == s);
    CHECK(load.progress.global_step == 2);
    CHECK(other->weights_digest() == saved);
    // And both go on alike: the optimizer state came back too.
    train(*ddp, *opt, mnist, 1, 4);
    train(*other, *oopt, mnist, 1, 4);
    CHECK(other->weights_digest() == ddp->weights_digest());
    ddp_test::comm().barrier()->wait();  // every rank has read it
    if (ddp_test::comm().rank() == 0) std::filesystem::remove_all(top);
  }
}

TEST_CASE("ZeRO hybrid: bad shard group sizes are refused by name") {
  const int n = ddp_test::comm().size();
  const ModelCase mnist{"mnist_net", Shape{1, 28, 28}};
  auto refused = [&](int stage, int s, const std::string& says) {
    CAPTURE(stage);
    CAPTURE(s);
    par::DDPOptions o;
    o.zero_stage = stage;
    o.shard_group_size = s;
    try {
      nn::make<par::DistributedDataParallel>(make_model(mnist, 1), ddp_test::shared_comm(), o);
      FAIL("accepted");
    } catch (const cohort::Error& e) {
      CHECK(std::string(e.what()).find(says) != std::string::npos);
      CHECK(std::string(e.what()).find("shard_group_size") != std::string::npos);
    }
  };
  refused(1, -1, "negative");
  refused(0, 1, "needs zero_stage");
  refused(2, n + 1, "larger than the group");
  if (n == 3) refused(1, 2, "does not divide");
  if (n == 4) refused(3, 3, "does not divide");
}
