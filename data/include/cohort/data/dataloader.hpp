// Batches from a Dataset: sampling (sharded per rank, shuffled per epoch), transforms, batching
// into [B, C, H, W] f32 images and [B] i64 labels, and a background thread that assembles the
// next batch while the caller trains on the current one.
//
// Usage (the loader's device gets the batches; the host device assembles them):
//   data::DataLoaderOptions o;
//   o.batch_size = 64;
//   o.shuffle = true;
//   data::DataLoader loader(dataset, o, {data::normalize({0.2860f}, {0.3530f})}, host, &dev);
//   for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
//     loader.set_epoch(epoch);               // reshuffles (PyTorch: sampler.set_epoch)
//     for (const data::Batch& b : loader) {  // or: Batch b; while (loader.next(b)) ...
//       ... b.images, b.labels ...
//     }
//   }
// Errors raised while assembling a batch (in the prefetch thread or a worker: the batch's first
// failing sample in row order, as without workers) are rethrown by next(), among them a label
// outside [0, dataset.num_classes()), checked here on the host because the loss ops do not read
// labels back from a GPU.
//
// For a device the host cannot address (a GPU), batches are assembled in pinned host memory and
// uploaded on the loader's own stream while the previous step computes (two buffers, so the next
// batch's upload overlaps this step); next() orders the compute stream after the upload and never
// blocks the host on it. For the host device nothing is copied: the assembled tensors are the
// batch.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
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
  // Threads that decode and transform the samples of a batch in parallel (torch's num_workers,
  // but splitting each batch across the threads rather than giving each a whole batch: the
  // prefetch thread still runs one batch ahead, so memory stays at one batch in flight). 0: the
  // prefetch thread (or next(), without prefetch) does it alone. The batches are bit-identical
  // for any value: each sample's transforms are keyed by (seed, epoch, sample), not by thread.
  // Worth it when get() is costly (JPEG decoding: TinyImageNetDataset), not for in-memory sets.
  int num_workers = 0;
  // How long next() waits for the prefetch thread; 0: cohort::default_timeout() (COHORT_TIMEOUT,
  // 300 s). On expiry next() throws naming the batch, the epoch and what the thread is doing.
  std::chrono::milliseconds timeout{0};
  // Run on each assembled batch (mixup, cutmix, mixup_or_cutmix): the batch then carries soft
  // targets (Batch::targets) beside its labels. Its num_classes() must cover the data set's.
  BatchTransformPtr batch_transform;
  // A sample whose read fails (Dataset::get or get_sized throws: a corrupt, truncated or
  // unreadable image) is replaced by the next sample of the data set that reads, with that
  // sample's label and the failed one's random transforms, instead of failing the batch; each
  // failure is kept (bad_samples()) and the Trainer reports them at the end of the epoch. Off:
  // the error, naming the file, stops the run (torchvision's behaviour). Errors of transforms and
  // labels are never skipped; 64 failures in a row are an error.
  bool skip_bad_samples = false;
};

// A sample skipped by DataLoaderOptions::skip_bad_samples.
struct BadSample {
  std::int64_t index;        // the data set's index of the sample that failed
  std::int64_t for_sample;   // the sample the batch asked for (index, or one before it)
  std::string error;         // what the read threw (names the file for image data sets)
};

struct Batch {
  Tensor images;          // [B, C, H, W] f32 on the loader's device
  Tensor labels;          // [B] i64 on the loader's device
  // [B, classes] f32 on the loader's device with DataLoaderOptions::batch_transform (the soft
  // targets MixUp and CutMix make, which CrossEntropyLoss takes); undefined without one.
  Tensor targets;
  std::int64_t index = 0; // batch number within the epoch
  // This batch's share of its step's global batch, relative to an equal share: rows x ranks /
  // the global batch's rows. 1 unless regroup() split a global batch unevenly; the Trainer scales
  // the loss's gradient by it, so the average over ranks is the global batch's mean (0: a rank
  // with no sample of the step, running it on a stand-in so that every rank takes part).
  double weight = 1.0;
  std::vector<std::int64_t> samples;  // the dataset index of each row, in row order
};

// The shape of one sample of `dataset` after `transforms` ([C, H, W]), as the DataLoader batches
// it: for images of different sizes, what the first transform that fixes the size makes of them
// (an error naming the data set when none does).
Shape transformed_sample_shape(const Dataset& dataset, const std::vector<TransformPtr>& transforms);

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
  // `first_batch` > 0 starts it there instead, as if batches 0..first_batch-1 had been taken,
  // without assembling them: a resumed run continues mid-epoch with the very batches it would
  // have seen (the permutation depends on seed and epoch only, each sample's random transforms on
  // seed, epoch and sample). first_batch may equal num_batches() (nothing left).
  void set_epoch(std::int64_t epoch, std::int64_t first_batch = 0);
  std::int64_t epoch() const;
  // The next batch of the epoch; false once the epoch is exhausted.
  bool next(Batch& out);

  // Range-for over the current epoch: begin() restarts it from its first batch (as iterating a
  // PyTorch DataLoader again does); call set_epoch first to reshuffle. One pass at a time: the
  // iterator is an input iterator over next(), and the Batch it yields is replaced by ++.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;
    iterator() = default;
    reference operator*() const { return batch_; }
    pointer operator->() const { return &batch_; }
    iterator& operator++();
    bool operator==(const iterator& o) const { return loader_ == o.loader_; }
    bool operator!=(const iterator& o) const { return loader_ != o.loader_; }

   private:
    friend class DataLoader;
    explicit iterator(DataLoader* loader);
    DataLoader* loader_ = nullptr;  // nullptr once the epoch is exhausted (== end())
    Batch batch_;
  };
  iterator begin();
  iterator end() { return iterator(); }

  // The shard this loader serves: `rank` of `world_size` (DistributedSampler's rules with the
  // options' shuffle, seed and sampler_drop_last). pad = false keeps every sample exactly once
  // (shards differ by at most one sample): what evaluation over several ranks needs. Restarts
  // the current epoch. The Trainer calls it for a data-parallel model; set it in the options
  // instead when you drive the loader yourself.
  void shard(int rank, int world_size, bool pad = true);
  int rank() const;
  int world_size() const;
  // Elastic training (cohort/parallel/elastic.hpp), after shard(): from the current batch on,
  // every step's global batch (the samples batch k of every shard holds together: batch_size x
  // world_size()) is split among `world` ranks instead, this loader taking the chunk's elements
  // rank, rank + world, ... So a group that shrank or grew sees exactly the samples, in the same
  // global batches, that the full group would have: each once. Batches then vary in size by
  // one row across ranks (Batch::weight says by how much); the number of batches per epoch is
  // unchanged. Lasts until the next shard(). regroup(rank(), world_size()) serves the shard.
  //
  // keep_rank_batch (elastic's --elastic-batch per-rank): each rank keeps batch_size samples
  // and the global batch becomes batch_size x world: from the current batch on, the rest of the
  // epoch's samples (in the same order) are dealt out in those global batches, so the number of
  // batches changes, and every sample is still seen once. The next epoch from its start keeps
  // the last global batch size. layout() describes the epoch's segments, for a rank that joins
  // (set_layout; "" : the shards' own). `from`: the batch the change starts at (-1: the next
  // one not yet taken); the loader continues there.
  void regroup(int rank, int world, bool keep_rank_batch = false, std::int64_t from = -1);
  int group_world() const;  // the ranks each global batch is split among
  std::string layout() const;
  // Every rank's samples of batch k of this epoch (the global batch, dataset indices in the
  // sampler's order): to name a batch that failed.
  std::vector<std::int64_t> global_batch_samples(std::int64_t k) const;
  void set_layout(const std::string& layout);  // restarts the current epoch at the same batch

  // The samples skipped in the current epoch (skip_bad_samples) by the batches next() has handed
  // out, in sample order: after next() returned false, all of the epoch's; empty at the start of
  // an epoch, whatever the prefetch thread has already read of its first batch.
  std::vector<BadSample> bad_samples() const;

  std::int64_t num_batches() const;   // per epoch, for this rank
  std::int64_t num_samples() const;   // per epoch, for this rank
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const;  // as given (rank and world size: as sharded)
  Shape batch_shape(std::int64_t batch) const;  // [batch, C', H', W'] after transforms

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DatasetPtr dataset_;
};

}  // namespace cohort::data
