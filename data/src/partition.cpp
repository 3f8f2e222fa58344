// data::partition (see cohort/data/dataset.hpp): the tutorial's DataPartitioner over a seeded
// permutation, so every rank computes the same parts without communicating.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/data/dataset.hpp"
#include "cohort/data/sampler.hpp"

namespace cohort::data {

std::vector<DatasetPtr> partition(DatasetPtr dataset, const std::vector<double>& fractions,
                                  std::uint64_t seed) {
  COHORT_CHECK(dataset != nullptr, "partition: dataset is null");
  COHORT_CHECK(!fractions.empty(), "partition: no fractions given");
  double total = 0;
  for (std::size_t i = 0; i < fractions.size(); ++i) {
    COHORT_CHECK(std::isfinite(fractions[i]) && fractions[i] > 0 && fractions[i] <= 1,
                 "partition: fraction ", i, " is ", fractions[i], "; each must be in (0, 1]");
    total += fractions[i];
  }
  COHORT_CHECK(total <= 1 + 1e-9, "partition: the fractions sum to ", total, ", more than 1");
  const std::int64_t n = dataset->size();
  const std::vector<std::int64_t> order = permutation(n, seed);
  std::vector<DatasetPtr> parts;
  std::size_t at = 0;
  for (const double f : fractions) {
    const auto len = static_cast<std::size_t>(f * static_cast<double>(n));
    std::vector<std::int64_t> idx(order.begin() + static_cast<std::ptrdiff_t>(at),
                                  order.begin() + static_cast<std::ptrdiff_t>(std::min(at + len, order.size())));
    at += idx.size();
    parts.push_back(subset(dataset, std::move(idx)));
  }
  return parts;
}

}  // namespace cohort::data
