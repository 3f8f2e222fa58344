// Batches from a Dataset: sampling (sharded per rank, shuffled per epoch), transforms, batching
// into [B, C, H, W] f32 images and [B] i64 labels, and a background thread that assembles the
// next batch while the caller trains on the current one.
//
// Usage:
//   DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .seed = 1});
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     loader.set_epoch(epoch);
//     Batch b;
//     while (loader.next(b)) { ... b.images, b.labels ... }
//   }
// Errors raised while assembling a batch (in the prefetch thread) are rethrown by next(), among
// them a label outside [0, dataset.num_classes()), checked here on the host because the loss ops do
// not read labels back from a GPU.
//
// For a device the host cannot address (a GPU), batches are assembled in pinned host memory and
// uploaded on the loader's own stream while the previous step computes (two buffers, so the next
// batch's upload overlaps this step); next() orders the compute stream after the upload and never
// blocks the host on it. For the host device nothing is copied: the assembled tensors are the
// batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "cohort/core/device.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/data/dataset.hpp"
#include "cohort/data/sampler.hpp"
#include "cohort/data/transforms.hpp"

namespace cohort::data {

struct DataLoaderOptions {
  std::int64_t batch_size = 64;
  bool shuffle = false;
  bool drop_last = false;          // drop the last incomplete batch
  std::uint64_t seed = 0;          // shuffling and random transforms
  int rank = 0, world_size = 1;    // shard of the data this loader serves (DistributedSampler)
  bool sampler_drop_last = false;  // DistributedSampler's drop_last (uneven shards)
  bool prefetch = true;            // assemble the next batch in a background thread
  // How long next() waits for the prefetch thread; 0: cohort::default_timeout() (COHORT_TIMEOUT,
  // 300 s). On expiry next() throws naming the batch, the epoch and what the thread is doing.
  std::chrono::milliseconds timeout{0};
};

struct Batch {
  Tensor images;          // [B, C, H, W] f32 on the loader's device
  Tensor labels;          // [B] i64 on the loader's device
  std::int64_t index = 0; // batch number within the epoch
};

class DataLoader {
 public:
  // `device` receives the batches (host memory is used to assemble them); nullptr = `host`. For a
  // device that is not host-accessible the loader holds two pinned staging buffers and two device
  // buffers of one full batch each for its lifetime.
  DataLoader(DatasetPtr dataset, DataLoaderOptions options, std::vector<TransformPtr> transforms,
             Device& host, Device* device = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts epoch `epoch` (reshuffles; restarts iteration). Also called implicitly with 0.
  void set_epoch(std::int64_t epoch);
  // The next batch of the epoch; false once the epoch is exhausted.
  bool next(Batch& out);

  std::int64_t num_batches() const;   // per epoch, for this rank
  std::int64_t num_samples() const;   // per epoch, for this rank
  const Dataset& dataset() const { return *dataset_; }
  Shape batch_shape(std::int64_t batch) const;  // [batch, C', H', W'] after transforms

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DatasetPtr dataset_;
};

}  // namespace cohort::data
