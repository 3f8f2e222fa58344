// DistributedSampler and its seeded permutation: torch's split of a (shuffled per epoch) index
// list into one shard per rank, padded or dropped to equal sizes, from a counter-based RNG so that
// every rank computes the same permutation without communicating.
#include "cohort/data/sampler.hpp"

#include <numeric>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"

namespace cohort::data {

std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  // Fisher-Yates; draw i uses stream block i, 64 bits mapped to [0, i] by multiply-shift
  // (bias below 2^-32 for any n this code will see).
  for (std::int64_t i = n - 1; i > 0; --i) {
    const rng::U32x4 r = rng::philox_block(seed, static_cast<std::uint64_t>(i));
    const unsigned __int128 x = (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
    const auto j = static_cast<std::int64_t>((x * static_cast<unsigned __int128>(i + 1)) >> 64);
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int replicas, int rank,
                                       bool shuffle, std::uint64_t seed, bool drop_last,
                                       bool pad)
    : n_(dataset_size), replicas_(replicas), rank_(rank), shuffle_(shuffle), drop_last_(drop_last),
      pad_(pad), seed_(seed) {
  COHORT_CHECK(dataset_size >= 0, "DistributedSampler: dataset size ", dataset_size, " is negative");
  COHORT_CHECK(replicas >= 1, "DistributedSampler: number of replicas ", replicas, " must be >= 1");
  COHORT_CHECK(rank >= 0 && rank < replicas, "DistributedSampler: rank ", rank,
               " out of range [0, ", replicas - 1, "]");
  COHORT_CHECK(pad || !drop_last, "DistributedSampler: pad = false and drop_last = true "
               "contradict each other (pad = false keeps every sample exactly once)");
  if (!pad_)
    num_samples_ = rank_ < n_ ? (n_ - rank_ + replicas_ - 1) / replicas_ : 0;
  else if (drop_last_ && n_ % replicas_ != 0)
    num_samples_ = (n_ - replicas_ + replicas_ - 1) / replicas_;  // ceil((n - R) / R)
  else
    num_samples_ = (n_ + replicas_ - 1) / replicas_;
  if (num_samples_ < 0) num_samples_ = 0;
}

std::vector<std::int64_t> DistributedSampler::all_indices() const {
  std::vector<std::int64_t> all;
  if (shuffle_) {
    all = permutation(n_, seed_ + static_cast<std::uint64_t>(epoch_));
  } else {
    all.resize(static_cast<std::size_t>(n_));
    std::iota(all.begin(), all.end(), 0);
  }
  const std::size_t total =
      pad_ ? static_cast<std::size_t>(num_samples_ * replicas_) : all.size();
  if (pad_ && !drop_last_ && total > all.size() && !all.empty()) {
    // Pad by repeating the list from its start (as often as needed), as torch does.
    const std::size_t base = all.size();
    for (std::size_t i = 0; all.size() < total; ++i) all.push_back(all[i % base]);
  }
  all.resize(std::min(total, all.size()));
  return all;
}

std::vector<std::int64_t> DistributedSampler::indices() const {
  const std::vector<std::int64_t> all = all_indices();
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (std::size_t i = static_cast<std::size_t>(rank_); i < all.size();
       i += static_cast<std::size_t>(replicas_))
    mine.push_back(all[i]);
  return mine;
}

}  // namespace cohort::data
