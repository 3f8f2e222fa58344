// What the ZeRO benchmarks share (bench/zero_memory.cpp, bench/sharded_checkpoint.cpp): a zoo
// model at 32x32 inputs wrapped at a ZeRO stage, Adam over its parameters (stage 0) or its pieces,
// and a rank's synthetic batch of 2.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/cohort.hpp"

namespace zero_bench {

struct Wrapped {
  cohort::nn::ModulePtr model;
  std::shared_ptr<cohort::parallel::DistributedDataParallel> ddp;
};
inline Wrapped wrap_model(const std::string& name, int stage,
                          std::shared_ptr<cohort::comm::Communicator> comm, cohort::Device& dev) {
  cohort::nn::manual_seed(1);
  cohort::models::ModelConfig cfg;
  cfg.image_size = 32;
  Wrapped w;
  w.model = cohort::models::make(name, dev, cfg);
  cohort::parallel::DDPOptions o;
  o.zero_stage = stage;
  w.ddp = cohort::nn::make<cohort::parallel::DistributedDataParallel>(w.model, std::move(comm), o);
  return w;
}

inline std::unique_ptr<cohort::optim::Optimizer> adam(const Wrapped& w, int stage) {
  cohort::optim::AdamOptions ao;
  if (stage > 0) return cohort::parallel::make_zero_optimizer<cohort::optim::Adam>(*w.ddp, ao);
  return std::make_unique<cohort::optim::Adam>(cohort::parallel::trainable_parameters(*w.model),
                                               ao);
}

// Rank `rank`'s batch of 2 (32x32, 10 classes) of a synthetic set of 4 n samples.
inline std::pair<cohort::Tensor, cohort::Tensor> batch(int rank, int n, cohort::Device& dev) {
  using cohort::Shape;
  cohort::data::SyntheticDataset ds(4 * n, Shape{3, 32, 32}, 10, 3);
  std::vector<float> x(2 * 3 * 32 * 32);
  std::vector<std::int64_t> y(2);
  for (int i = 0; i < 2; ++i) y[i] = ds.get(rank * 2 + i, x.data() + i * 3 * 32 * 32);
  return {cohort::Tensor::from_vector(x, Shape{2, 3, 32, 32}, dev),
          cohort::Tensor::from_vector(y, Shape{2}, dev)};
}

}  // namespace zero_bench
