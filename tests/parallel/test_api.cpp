// The user-facing layer over DDP (issue: the library as a user meets it), on real ranks:
// Horovod-style helpers against hand-computed values, and the Trainer's one-call distributed
// run against a world-size-1 evaluation every rank computes itself.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cohort/cohort.hpp"
#include "../common/testing.hpp"
#include "ddp_test.hpp"

namespace nn = cohort::nn;
namespace par = cohort::parallel;
namespace data = cohort::data;
using cohort::Tensor;

namespace {
nn::ModulePtr mlp(std::uint64_t seed) {
  auto& dev = cohort::host_device();
  nn::manual_seed(seed);
  return nn::sequential({{"flatten", nn::make<nn::Flatten>()},
                         {"fc1", nn::make<nn::Linear>(64, 16, dev)},
                         {"relu", nn::make<nn::ReLU>()},
                         {"fc2", nn::make<nn::Linear>(16, 10, dev)}});
}

cohort::optim::SGDOptions sgd_options() {
  cohort::optim::SGDOptions o;
  o.lr = 0.1;
  return o;
}

// Every rank's 64-bit weights digest, gathered.
std::vector<std::string> digests(const nn::Module& m, cohort::comm::Communicator& c) {
  const std::string mine = par::weights_digest(m);
  std::vector<char> all(mine.size() * static_cast<std::size_t>(c.size()));
  c.allgather(mine.data(), all.data(), mine.size(), cohort::DType::u8)->wait();
  std::vector<std::string> out;
  for (int r = 0; r < c.size(); ++r)
    out.emplace_back(all.data() + r * mine.size(), mine.size());
  return out;
}
}  // namespace

TEST_CASE("broadcast_parameters: every rank ends with the root's weights") {
  auto& c = ddp_test::comm();
  auto model = mlp(100 + static_cast<std::uint64_t>(c.rank()));  // different on every rank
  const int root = c.size() - 1;
  const std::vector<std::string> before = digests(*model, c);
  par::broadcast_parameters(*model, c, root);
  const std::vector<std::string> after = digests(*model, c);
  for (int r = 0; r < c.size(); ++r) CHECK(after[static_cast<std::size_t>(r)] == before[static_cast<std::size_t>(root)]);
  if (c.size() > 1) CHECK(before[0] != before[1]);
  CHECK_THROWS_WITH_AS(par::broadcast_parameters(*model, c, c.size()),
                       doctest::Contains("broadcast root"), cohort::Error);
}

TEST_CASE("DistributedOptimizer and average_gradients average over the ranks") {
  auto& c = ddp_test::comm();
  auto model = mlp(7);
  const int n = c.size();
  // Gradient of every element on rank r: r + 1. Average: (n + 1) / 2.
  auto fill = [&] {
    for (auto& p : model->parameters()) cohort::ops::fill(p->grad, static_cast<double>(c.rank() + 1));
  };
  const double avg = (n + 1) / 2.0;
  fill();
  par::average_gradients(*model, c);
  for (auto& p : model->parameters())
    for (float g : p->grad.to_vector<float>()) CHECK(g == doctest::Approx(avg));

  cohort::optim::SGDOptions so;
  so.lr = 1.0;
  cohort::optim::SGD sgd(model->parameters(), so);
  const std::vector<float> w0 = model->parameters()[0]->value.to_vector<float>();
  {
    par::DistributedOptimizer dopt(sgd, ddp_test::shared_comm());
    fill();
    dopt.step();  // w -= lr * average
    const std::vector<float> w1 = model->parameters()[0]->value.to_vector<float>();
    for (std::size_t i = 0; i < w0.size(); ++i) CHECK(w1[i] == doctest::Approx(w0[i] - avg));
  }
  // Once the wrapper is gone, step() no longer communicates: this rank's own gradient applies.
  const std::vector<float> w1 = model->parameters()[0]->value.to_vector<float>();
  fill();
  sgd.step();
  const std::vector<float> w2 = model->parameters()[0]->value.to_vector<float>();
  for (std::size_t i = 0; i < w1.size(); ++i) CHECK(w2[i] == doctest::Approx(w1[i] - (c.rank() + 1)));
}

TEST_CASE("Trainer given a DDP model: shards, evaluates the whole test set, saves on rank 0") {
  auto& c = ddp_test::comm();
  auto& dev = cohort::host_device();
  auto ddp = nn::make<par::DistributedDataParallel>(mlp(3), ddp_test::shared_comm());
  auto train_set = std::make_shared<data::SyntheticDataset>(256, cohort::Shape{1, 8, 8}, 10, 11);
  auto test_set = std::make_shared<data::SyntheticDataset>(101, cohort::Shape{1, 8, 8}, 10, 12);
  data::DataLoaderOptions lo;
  lo.batch_size = 16;
  lo.shuffle = true;
  data::DataLoader train(train_set, lo, {}, dev);
  lo.batch_size = 10;  // 101 samples: uneven shards and a short last batch
  lo.shuffle = false;
  data::DataLoader test(test_set, lo, {}, dev);
  cohort::optim::Adam adam(ddp->parameters());
  nn::CrossEntropyLoss loss;
  cohort::train::TrainerOptions to;
  to.show_progress = false;
  const std::string ckpt = "api_trainer_" + std::to_string(c.size()) + ".safetensors";
  to.checkpoint_path = ckpt;
  cohort::train::Trainer trainer(*ddp, loss, adam, nullptr, to);
  CHECK(trainer.world_size() == c.size());
  CHECK(trainer.rank() == c.rank());
  const auto results = trainer.fit(train, &test);
  REQUIRE(results.size() == 1);
  CHECK(train.world_size() == c.size());
  CHECK(train.rank() == c.rank());
  CHECK(results[0].steps == (256 / c.size() + 15) / 16);
  CHECK(ddp->weights_identical_across_ranks());

  // The reference: this rank alone evaluates the same weights on the whole test set.
  data::DataLoader whole(test_set, lo, {}, dev);
  cohort::optim::SGD unused(ddp->module().parameters(), sgd_options());
  cohort::train::TrainerOptions so;
  so.show_progress = false;
  cohort::train::Trainer alone(ddp->module(), loss, unused, nullptr, so);
  const cohort::train::EvalResult ref = alone.evaluate(whole);
  CHECK(ref.samples == 101);
  CHECK(results[0].eval.samples == ref.samples);
  CHECK(results[0].eval.correct == ref.correct);
  CHECK(results[0].eval.loss == doctest::Approx(ref.loss).epsilon(1e-6));

  c.barrier()->wait();
  CHECK(std::filesystem::exists(ckpt));
  // Resume on every rank from rank 0's file: the same weights, the epoch count restored.
  auto fresh = mlp(99);
  cohort::optim::Adam adam2(fresh->parameters());
  cohort::train::Trainer again(*fresh, loss, adam2, nullptr, so);
  const auto got = again.resume(ckpt);
  CHECK(got.progress.epoch == 1);
  CHECK(par::weights_digest(*fresh) == ddp->weights_digest());
  CHECK(again.fit(train, nullptr).empty());  // epoch 1 of 1 is done already
  c.barrier()->wait();
  if (c.rank() == 0) {
    std::filesystem::remove(ckpt);
    std::filesystem::remove(cohort::train::state_path_for(ckpt));
  }
}

TEST_CASE("Trainer: a loader sharded differently from the rank is an error naming both") {
  auto& c = ddp_test::comm();
  if (c.size() < 2) {
    MESSAGE("needs two ranks to disagree: checked in the np2 entries");
    return;
  }
  auto& dev = cohort::host_device();
  auto ddp = nn::make<par::DistributedDataParallel>(mlp(3), ddp_test::shared_comm());
  auto ds = std::make_shared<data::SyntheticDataset>(64, cohort::Shape{1, 8, 8}, 10, 1);
  data::DataLoaderOptions lo;
  lo.rank = (c.rank() + 1) % c.size();
  lo.world_size = c.size();
  data::DataLoader loader(ds, lo, {}, dev);
  cohort::optim::SGD sgd(ddp->parameters(), sgd_options());
  nn::CrossEntropyLoss loss;
  cohort::train::TrainerOptions to;
  to.show_progress = false;
  cohort::train::Trainer trainer(*ddp, loss, sgd, nullptr, to);
  CHECK_THROWS_WITH_AS(trainer.fit(loader), doctest::Contains("loader serves shard"), cohort::Error);
}

// Breaks the communicator (a mismatch leaves it unusable, as NCCL does after an error), so it runs
// in its own ctest entries: parallel_api_errors_*.
TEST_CASE("collective errors name the API call that issued it") {
  auto& c = ddp_test::comm();
  if (c.size() < 2) return;
  auto ddp = nn::make<par::DistributedDataParallel>(mlp(3), ddp_test::shared_comm());
  for (auto& p : ddp->parameters()) cohort::ops::fill(p->grad, 1.0);
  // Rank 0 checks the weights (an all-gather) while the others average gradients (an
  // all-reduce): every rank's error says which of its calls failed.
  const std::string e = cohort::testing::error_of([&] {
    if (c.rank() == 0)
      ddp->weights_identical_across_ranks();
    else
      par::average_gradients(ddp->module(), c);
  });
  MESSAGE(e);
  CHECK(e.find("collective mismatch") != std::string::npos);
  if (c.rank() == 0)
    CHECK(e.find("DistributedDataParallel::weights_identical_across_ranks (all-gather of the "
                 "weights digests): ") != std::string::npos);
  else
    CHECK(e.find("average_gradients (all-reduce of the gradients): ") != std::string::npos);
}
