// Which sample indices a rank visits in an epoch: the rules of PyTorch's DistributedSampler.
//
// With n samples and `replicas` ranks: if drop_last and n is not divisible, each rank gets
// ceil((n - replicas) / replicas) samples and the tail is dropped; otherwise ceil(n / replicas),
// and the index list is padded by repeating it from the start. Rank r takes every replicas-th
// index starting at r. With shuffle, the list is a permutation seeded by seed + epoch (Philox
// Fisher-Yates: the same on every rank, so shards never overlap; not torch's exact permutation).
#pragma once

#include <cstdint>
#include <vector>

namespace cohort::data {

class DistributedSampler {
 public:
  DistributedSampler(std::int64_t dataset_size, int replicas = 1, int rank = 0,
                     bool shuffle = true, std::uint64_t seed = 0, bool drop_last = false,
                     bool pad = true);
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::int64_t epoch() const { return epoch_; }
  std::int64_t num_samples() const { return num_samples_; }  // this rank's
  int replicas() const { return replicas_; }
  int rank() const { return rank_; }
  std::vector<std::int64_t> indices() const;  // this rank's, for the current epoch
  // Every rank's indices for the current epoch, padded or cut as above, before the split: rank r's
  // indices() are its elements r, r + replicas, r + 2 replicas, ...
  std::vector<std::int64_t> all_indices() const;

 private:
  std::int64_t n_;
  int replicas_, rank_;
  bool shuffle_, drop_last_, pad_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
  std::int64_t num_samples_ = 0;
};

// A seeded permutation of [0, n) (Fisher-Yates over Philox draws).
std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed);

}  // namespace cohort::data
