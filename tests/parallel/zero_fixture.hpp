// Shared by the ZeRO tests (test_zero.cpp: stages 1-3 against DDP; test_zero3.cpp: stage 3's
// units, memory and gathers): a byte-counting communicator, the zoo's models at small inputs with
// seeded batches, a training loop and the five optimizers.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/layers.hpp"
#include "cohort/models.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/zero.hpp"
#include "ddp_fixture.hpp"

namespace zero_test {
namespace nn = cohort::nn;
namespace optim = cohort::optim;
namespace par = cohort::parallel;
using cohort::ParameterPtr;
using cohort::Shape;
using cohort::Tensor;

// Counts the elements each op makes this rank send (a ring's share: all-gather and
// reduce-scatter (n-1) x count, all-reduce 2 (n-1)/n x count, a send its count).
class ByteCountingComm final : public cohort::comm::Communicator {
 public:
  explicit ByteCountingComm(std::shared_ptr<cohort::comm::Communicator> inner)
      : inner_(std::move(inner)) {}
  double sent = 0;  // f32 elements
  int reduce_scatters = 0, allgathers = 0, allreduces = 0, sends = 0;
  std::string backend() const override { return inner_->backend(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  cohort::comm::Capabilities capabilities() const override { return inner_->capabilities(); }
  cohort::comm::WorkHandle allreduce(const void* s, void* r, std::size_t n, cohort::DType d,
                                     cohort::comm::ReduceOp op, cohort::comm::Timeout t) override {
    ++allreduces;
    sent += 2.0 * (size() - 1) / size() * static_cast<double>(n);
    return inner_->allreduce(s, r, n, d, op, t);
  }
  cohort::comm::WorkHandle broadcast(void* b, std::size_t n, cohort::DType d, int root,
                                     cohort::comm::Timeout t) override {
    return inner_->broadcast(b, n, d, root, t);
  }
  cohort::comm::WorkHandle allgather(const void* s, void* r, std::size_t n, cohort::DType d,
                                     cohort::comm::Timeout t) override {
    ++allgathers;
    sent += static_cast<double>(size() - 1) * static_cast<double>(n);
    return inner_->allgather(s, r, n, d, t);
  }
  cohort::comm::WorkHandle reduce_scatter(const void* s, void* r, std::size_t n, cohort::DType d,
                                          cohort::comm::ReduceOp op,
                                          cohort::comm::Timeout t) override {
    ++reduce_scatters;
    sent += static_cast<double>(size() - 1) * static_cast<double>(n);
    return inner_->reduce_scatter(s, r, n, d, op, t);
  }
  cohort::comm::WorkHandle barrier(cohort::comm::Timeout t) override { return inner_->barrier(t); }
  cohort::comm::WorkHandle send(const void* b, std::size_t n, cohort::DType d, int peer, int tag,
                                cohort::comm::Timeout t) override {
    ++sends;
    sent += static_cast<double>(n);
    return inner_->send(b, n, d, peer, tag, t);
  }
  cohort::comm::WorkHandle recv(void* b, std::size_t n, cohort::DType d, int peer, int tag,
                                cohort::comm::Timeout t) override {
    return inner_->recv(b, n, d, peer, tag, t);
  }
  std::unique_ptr<cohort::comm::CommBuffer> alloc_buffer(std::size_t bytes,
                                                         cohort::comm::Timeout t) override {
    return inner_->alloc_buffer(bytes, t);
  }

 private:
  std::shared_ptr<cohort::comm::Communicator> inner_;
};

// A model of the zoo by name, seeded, at a small input size.
struct ModelCase {
  std::string name;
  Shape input;  // per sample
};

// 24 Linear(128, 128) + ReLU and a head (fc0..fc23, head): many units or buckets of one layer's
// size, so holding the whole model and holding a few layers differ by far more than noise.
inline nn::ModulePtr deep_mlp(cohort::Device& dev) {
  nn::manual_seed(3);
  std::vector<std::pair<std::string, nn::ModulePtr>> layers;
  for (int i = 0; i < 24; ++i) {
    layers.emplace_back("fc" + std::to_string(i), nn::make<nn::Linear>(128, 128, dev));
    layers.emplace_back("relu" + std::to_string(i), nn::make<nn::ReLU>());
  }
  layers.emplace_back("head", nn::make<nn::Linear>(128, 10, dev));
  return nn::make<nn::Sequential>(layers);
}
// deep_mlp's batch of 8 on `rank`: inputs and class targets that differ between ranks.
inline std::pair<Tensor, Tensor> deep_mlp_batch(cohort::Device& dev, int rank) {
  const std::int64_t per = 8;
  std::vector<float> xs(static_cast<std::size_t>(per * 128));
  std::vector<std::int64_t> ys(static_cast<std::size_t>(per));
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(0.37f * static_cast<float>(i + 1000 * rank));
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<std::int64_t>((i + rank) % 10);
  return {Tensor::from_vector(xs, Shape{per, 128}, dev), Tensor::from_vector(ys, Shape{per}, dev)};
}

inline nn::ModulePtr make_model(const ModelCase& mc, std::uint64_t seed) {
  nn::manual_seed(seed);
  cohort::models::ModelConfig cfg;
  cfg.num_classes = 10;
  cfg.in_channels = mc.input[0];
  cfg.image_size = mc.input[1];
  return cohort::models::make(mc.name, ddp_test::test_device(), cfg);
}

// This rank's batch of step `s`: rows [rank * per, (rank + 1) * per) of a seeded global batch.
inline std::pair<Tensor, Tensor> batch_of(const ModelCase& mc, int s, int rank, std::int64_t per,
                                          std::int64_t world) {
  auto& dev = ddp_test::test_device();
  cohort::data::SyntheticDataset ds(per * world, mc.input, 10, 100 + static_cast<unsigned>(s));
  std::vector<float> x(static_cast<std::size_t>(per * mc.input.numel()));
  std::vector<std::int64_t> y(static_cast<std::size_t>(per));
  for (std::int64_t i = 0; i < per; ++i)
    y[static_cast<std::size_t>(i)] = ds.get(rank * per + i, x.data() + i * mc.input.numel());
  std::vector<std::int64_t> dims = {per};
  for (auto d : mc.input.dims()) dims.push_back(d);
  return {Tensor::from_vector(x, Shape(dims), dev), Tensor::from_vector(y, Shape{per}, dev)};
}

using MakeOptimizer =
    std::function<std::unique_ptr<optim::Optimizer>(const std::vector<ParameterPtr>&)>;

// `steps` steps of `ddp` with an optimizer over `params` (the model's, or its shards); with
// `accumulate` > 1, that many micro-batches a step, all but the last under no_sync().
// `before_step` runs between the last backward and the step (clipping).
inline void train(par::DistributedDataParallel& ddp, optim::Optimizer& opt, const ModelCase& mc,
                  int steps, std::int64_t per, int accumulate = 1,
                  const std::function<void()>& before_step = {}) {
  auto& c = ddp.communicator();
  nn::CrossEntropyLoss loss;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    for (int k = 0; k < accumulate; ++k) {
      auto [x, y] = batch_of(mc, s * accumulate + k, c.rank(), per, c.size());
      ddp.set_grad_sync(k + 1 == accumulate);
      loss.forward(ddp.forward(x), y);
      ddp.backward(loss.backward(), false);
    }
    ddp.set_grad_sync(true);
    if (before_step) before_step();
    opt.step();
  }
}

// The digest after `steps` of deterministic DDP and of deterministic ZeRO at `stage` (hybrid
// sharding with `shard_group_size`, DDPOptions::shard_group_size).
inline std::pair<std::string, std::string> ddp_and_zero(const ModelCase& mc,
                                                        const MakeOptimizer& make, int steps,
                                                        std::int64_t per, int stage,
                                                        int accumulate = 1,
                                                        int shard_group_size = 0) {
  par::DDPOptions o;
  o.deterministic = true;
  o.bucket_cap_mb = 0.05;  // several buckets, each split across the ranks
  o.first_bucket_mb = 0.01;
  auto ddp = nn::make<par::DistributedDataParallel>(make_model(mc, 7), ddp_test::shared_comm(), o);
  auto opt = make(par::trainable_parameters(ddp->module()));
  train(*ddp, *opt, mc, steps, per, accumulate);
  o.zero_stage = stage;
  o.shard_group_size = shard_group_size;
  auto zero = nn::make<par::DistributedDataParallel>(make_model(mc, 7), ddp_test::shared_comm(), o);
  auto zopt = make(zero->shard_parameters(par::trainable_parameters(zero->module())));
  zero->attach_optimizer(*zopt);
  train(*zero, *zopt, mc, steps, per, accumulate);
  // Batch norm's running statistics are each rank's own after its last forward (DDP copies rank
  // 0's at the next one): the ranks agree where DDP's do, and each rank's digest is compared
  // with its DDP's by the caller.
  const bool ddp_agree = ddp->weights_identical_across_ranks();
  CHECK(zero->weights_identical_across_ranks() == ddp_agree);
  return {ddp->weights_digest(), zero->weights_digest()};
}

// The largest |a - b| / (1e-3 + |a|) over the parameters of two models of the same layout.
inline double worst_relative_difference(const nn::Module& a_model, const nn::Module& b_model) {
  const auto a = a_model.named_parameters(), b = b_model.named_parameters();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto va = a[i].param->value.to_vector<float>(), vb = b[i].param->value.to_vector<float>();
    for (std::size_t k = 0; k < va.size(); ++k)
      worst = std::max(worst, std::abs(static_cast<double>(va[k]) - vb[k]) /
                                  (1e-3 + std::abs(static_cast<double>(va[k]))));
  }
  return worst;
}

// A directory every rank sees: rank 0 makes it, the name travels by broadcast.
inline std::string shared_dir(cohort::comm::Communicator& c) {
  char name[64] = "/tmp/cohort-sharded-XXXXXX";
  if (c.rank() == 0) REQUIRE(mkdtemp(name) != nullptr);
  c.broadcast(name, sizeof name, cohort::DType::u8, 0)->wait();
  return name;
}

inline std::vector<std::pair<std::string, MakeOptimizer>> optimizers() {
  return {
      {"SGD momentum 0.9, weight decay 1e-4, nesterov",
       [](const std::vector<ParameterPtr>& ps) -> std::unique_ptr<optim::Optimizer> {
         optim::SGDOptions o;
         o.lr = 0.05;
         o.momentum = 0.9;
         o.weight_decay = 1e-4;
         o.nesterov = true;
         return std::make_unique<optim::SGD>(ps, o);
       }},
      {"Adam",
       [](const std::vector<ParameterPtr>& ps) -> std::unique_ptr<optim::Optimizer> {
         optim::AdamOptions o;
         o.lr = 1e-3;
         return std::make_unique<optim::Adam>(ps, o);
       }},
      {"AdamW weight decay 0.05",
       [](const std::vector<ParameterPtr>& ps) -> std::unique_ptr<optim::Optimizer> {
         optim::AdamWOptions o;
         o.lr = 1e-3;
         o.weight_decay = 0.05;
         return std::make_unique<optim::AdamW>(ps, o);
       }},
      {"RMSprop momentum 0.9 (train.py's eps, alpha)",
       [](const std::vector<ParameterPtr>& ps) -> std::unique_ptr<optim::Optimizer> {
         optim::RMSpropOptions o;
         o.lr = 1e-3;
         o.momentum = 0.9;
         o.eps = 0.0316;
         o.alpha = 0.9;
         return std::make_unique<optim::RMSprop>(ps, o);
       }},
      {"Adadelta lr 1",
       [](const std::vector<ParameterPtr>& ps) -> std::unique_ptr<optim::Optimizer> {
         optim::AdadeltaOptions o;
         o.lr = 1.0;
         return std::make_unique<optim::Adadelta>(ps, o);
       }},
  };
}

}  // namespace zero_test
