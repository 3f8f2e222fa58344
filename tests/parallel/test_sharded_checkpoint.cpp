// Sharded checkpoints through the library (train/sharded_checkpoint.hpp) at this job's world
// size, against plain DDP as the reference (ZeRO is bitwise DDP's, test_zero.cpp): a checkpoint
// written at one stage loads at every stage, 0 included, and training goes on with DDP's bits;
// loaded at stage 0 every value and Adam buffer equals DDP's own; bad input is refused by name
// and changes nothing. N -> M world sizes: tests/launch/test_sharded_checkpoint.sh.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../common/testing.hpp"
#include "cohort/train/safetensors.hpp"
#include "cohort/train/sharded_checkpoint.hpp"
#include "zero_fixture.hpp"

namespace {
using cohort::testing::error_of;
using namespace zero_test;
namespace train = cohort::train;

const ModelCase kMnist{"mnist_net", Shape{1, 28, 28}};

std::unique_ptr<optim::Optimizer> adam(const std::vector<ParameterPtr>& ps) {
  return optimizers()[1].second(ps);
}

struct Run {
  std::shared_ptr<par::DistributedDataParallel> ddp;
  std::unique_ptr<optim::Optimizer> opt;
};
// mnist_net (seed `seed`) at `stage`, deterministic, Adam over its parameters or its pieces.
Run make_run(int stage, std::uint64_t seed) {
  par::DDPOptions o;
  o.deterministic = true;
  o.bucket_cap_mb = 0.05;  // several buckets, each split across the ranks
  o.first_bucket_mb = 0.01;
  o.zero_stage = stage;
  Run r;
  r.ddp =
      nn::make<par::DistributedDataParallel>(make_model(kMnist, seed), ddp_test::shared_comm(), o);
  const auto params = par::trainable_parameters(r.ddp->module());
  r.opt = adam(stage > 0 ? r.ddp->shard_parameters(params) : params);
  if (stage > 0) r.ddp->attach_optimizer(*r.opt);
  return r;
}

// Step `s` of the training (its own batch), as zero_fixture's train() runs step s.
void step(Run& r, int s) {
  auto& c = r.ddp->communicator();
  nn::CrossEntropyLoss loss;
  r.opt->zero_grad();
  auto [x, y] = batch_of(kMnist, s, c.rank(), 2, c.size());
  loss.forward(r.ddp->forward(x), y);
  r.ddp->backward(loss.backward(), false);
  r.opt->step();
}

}  // namespace

TEST_CASE("ZeRO sharded checkpoint: saved at one stage, loaded at every stage, DDP's bits go on") {
  auto& c = *ddp_test::shared_comm();
  const std::string dir = shared_dir(c);
  Run ref = make_run(0, 7);  // DDP: 3 steps straight
  for (int s = 0; s < 3; ++s) step(ref, s);
  const std::string want = ref.ddp->weights_digest();
  Run ddp2 = make_run(0, 7);  // DDP: the state after 2 steps, for the stage-0 load's comparison
  for (int s = 0; s < 2; ++s) step(ddp2, s);
  for (int saved : {1, 2, 3}) {
    CAPTURE(saved);
    Run z = make_run(saved, 7);
    for (int s = 0; s < 2; ++s) step(z, s);
    const std::string ckpt = dir + "/s" + std::to_string(saved);
    train::save_sharded_checkpoint(ckpt, *z.ddp, *z.opt, nullptr, {0, 2, 2});
    for (int target : {0, 1, 2, 3}) {
      CAPTURE(target);
      Run t = make_run(target, 99);  // other weights, no optimizer state yet
      const train::ShardedLoad got = train::load_sharded_checkpoint(ckpt, *t.ddp, *t.opt, nullptr);
      CHECK(got.progress.global_step == 2);
      CHECK(got.progress.step_in_epoch == 2);
      CHECK(got.saved_world_size == c.size());
      if (target == 0) {  // every value and every Adam buffer equals DDP's after 2 steps
        const auto a = ddp2.ddp->module().state_dict(), b = t.ddp->module().state_dict();
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          CAPTURE(a[i].name);
          CHECK(a[i].tensor.to_vector<float>() == b[i].tensor.to_vector<float>());
        }
        const auto sa = ddp2.opt->state(), sb = t.opt->state();
        CHECK(sa.scalars == sb.scalars);
        REQUIRE(sa.tensors.size() == sb.tensors.size());
        for (const auto& [k, v] : sa.tensors) {
          CAPTURE(k);
          REQUIRE(sb.tensors.count(k) == 1);
          CHECK(v.to_vector<float>() == sb.tensors.at(k).to_vector<float>());
        }
      }
      step(t, 2);  // the third step from the loaded state: DDP's bits
      CHECK(t.ddp->weights_digest() == want);
    }
  }
  c.barrier()->wait();
  if (c.rank() == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("ZeRO sharded checkpoint: bad input is refused by name on every rank, nothing changed") {
  auto& c = *ddp_test::shared_comm();
  const std::string dir = shared_dir(c);
  Run z = make_run(2, 7);
  step(z, 0);
  const std::string ckpt = dir + "/ok";
  train::save_sharded_checkpoint(ckpt, *z.ddp, *z.opt, nullptr, {0, 1, 1});
  const std::string before = z.ddp->weights_digest();

  // Another model: deep_mlp's names and shapes.
  {
    par::DDPOptions o;
    o.zero_stage = 2;
    auto other = nn::make<par::DistributedDataParallel>(deep_mlp(ddp_test::test_device()),
                                                        ddp_test::shared_comm(), o);
    auto oopt = adam(other->shard_parameters(par::trainable_parameters(other->module())));
    const std::string digest = other->weights_digest();
    const std::string e =
        error_of([&] { train::load_sharded_checkpoint(ckpt, *other, *oopt, nullptr); });
    INFO(e);
    CHECK(e.find("the checkpoint has no 'model.") != std::string::npos);
    CHECK(e.find("(a checkpoint of another model?)") != std::string::npos);
    CHECK(other->weights_digest() == digest);
  }
  // An optimizer over the whole parameters at stage 2 (not shard_parameters' pieces).
  {
    auto whole = adam(par::trainable_parameters(z.ddp->module()));
    const std::string e = error_of(
        [&] { train::save_sharded_checkpoint(dir + "/bad", *z.ddp, *whole, nullptr, {}); });
    INFO(e);
    CHECK(e.find("is not a piece that the DistributedDataParallel's shard_parameters() made") !=
          std::string::npos);
    CHECK(!std::filesystem::exists(dir + "/bad"));
  }
  // A file of another save in place of this rank's: every rank refuses, the run unchanged.
  c.barrier()->wait();
  const std::string shard1 = ckpt + "/shard-" + std::to_string(c.size() - 1) + "-of-" +
                             std::to_string(c.size()) + ".safetensors";
  if (c.rank() == 0) {
    const auto h = cohort::io::read_safetensors_header(shard1);
    auto md = h.metadata;
    md["cohort.save_id"] = "12345";
    std::vector<cohort::io::SafetensorsEntry> es;
    for (const auto& t : cohort::io::load_safetensors(shard1).tensors) es.push_back(t);
    cohort::io::save_safetensors(shard1, es, md);
  }
  c.barrier()->wait();
  const std::string e =
      error_of([&] { train::load_sharded_checkpoint(ckpt, *z.ddp, *z.opt, nullptr); });
  INFO(e);
  CHECK(e.find(shard1 + "' is not rank " + std::to_string(c.size() - 1) +
               "'s shard of this save (its save id 12345") != std::string::npos);
  CHECK(z.ddp->weights_digest() == before);
  // No checkpoint at all.
  const std::string none =
      error_of([&] { train::load_sharded_checkpoint(dir + "/none", *z.ddp, *z.opt, nullptr); });
  CHECK(none.find("no sharded checkpoint there") != std::string::npos);
  c.barrier()->wait();
  if (c.rank() == 0) std::filesystem::remove_all(dir);
}
