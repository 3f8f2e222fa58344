// The data pieces a newcomer reaches for first: range-for over a DataLoader, re-sharding a loader
// (the Trainer does it), the unpadded DistributedSampler used for evaluation, subsets by index and
// the tutorial's fraction-based partitioner. Expected values are derived by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "../common/testing.hpp"
#include "cohort/data.hpp"
#include "cohort/devices.hpp"
#include "ids_dataset.hpp"

using namespace cohort::data;
using V = std::vector<std::int64_t>;

namespace {
using data_test::Ids;

V ids_of(const Batch& b) {
  V v;
  for (float x : b.images.to_vector<float>()) v.push_back(static_cast<std::int64_t>(x));
  return v;
}
V all_ids(const Dataset& d) {
  V v;
  float x;
  for (std::int64_t i = 0; i < d.size(); ++i) {
    d.get(i, &x);
    v.push_back(static_cast<std::int64_t>(x));
  }
  return v;
}
}  // namespace

TEST_CASE("DataLoader: range-for visits the epoch, and each loop starts it again") {
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(std::make_shared<Ids>(10), o, {}, host);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<V> seen;
    for (const Batch& b : loader) seen.push_back(ids_of(b));
    REQUIRE(seen.size() == 3);
    CHECK(seen[0] == V{0, 1, 2, 3});
    CHECK(seen[2] == V{8, 9});
  }
  // A finished loop leaves the epoch exhausted for next(), as before range-for existed.
  Batch b;
  CHECK(!loader.next(b));
  // Half-way through with next(), a range-for starts the epoch from its first batch again.
  loader.set_epoch(0);
  REQUIRE(loader.next(b));
  REQUIRE(loader.next(b));
  CHECK(ids_of(*loader.begin()) == V{0, 1, 2, 3});
  CHECK(loader.begin() != loader.end());
  o.shuffle = true;
  o.seed = 5;
  DataLoader shuffled(std::make_shared<Ids>(10), o, {}, host);
  shuffled.set_epoch(3);
  V order;
  for (const Batch& sb : shuffled)
    for (auto id : ids_of(sb)) order.push_back(id);
  CHECK(shuffled.epoch() == 3);
  V expect = permutation(10, 5 + 3);  // the sampler's rule: seed + epoch
  CHECK(order == expect);
}

TEST_CASE("DataLoader::shard: DistributedSampler rules, and without padding for evaluation") {
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 100;
  DataLoader loader(std::make_shared<Ids>(11), o, {}, host);
  CHECK(loader.world_size() == 1);
  loader.shard(1, 3);  // padded: 4 samples each, indices 1, 4, 7, 10
  CHECK(loader.rank() == 1);
  CHECK(loader.world_size() == 3);
  CHECK(ids_of(*loader.begin()) == V{1, 4, 7, 10});
  loader.shard(2, 3);  // padded: 2, 5, 8 and the first index again
  CHECK(ids_of(*loader.begin()) == V{2, 5, 8, 0});
  loader.shard(2, 3, /*pad=*/false);
  CHECK(ids_of(*loader.begin()) == V{2, 5, 8});
  std::multiset<std::int64_t> every;
  for (int r = 0; r < 3; ++r) {
    loader.shard(r, 3, false);
    for (auto id : ids_of(*loader.begin())) every.insert(id);
  }
  CHECK(every.size() == 11);
  CHECK(std::set<std::int64_t>(every.begin(), every.end()).size() == 11);
  CHECK(cohort::testing::error_of([&] { loader.shard(3, 3); }).find("rank 3 out of range") !=
        std::string::npos);
  CHECK(DistributedSampler(2, 3, 2, false, 0, false, false).num_samples() == 0);
}

TEST_CASE("subset by indices and the fraction partitioner") {
  auto ds = std::make_shared<Ids>(10);
  CHECK(all_ids(*subset(ds, V{7, 3, 3})) == V{7, 3, 3});
  CHECK(cohort::testing::error_of([&] { subset(ds, V{1, 10}); }).find("index 10 (position 1)") !=
        std::string::npos);

  const auto parts = partition(ds, {0.5, 0.3, 0.2}, 1234);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0]->size() == 5);
  CHECK(parts[1]->size() == 3);
  CHECK(parts[2]->size() == 2);
  // The parts are consecutive slices of the seeded permutation, so together they are all of it.
  const V perm = permutation(10, 1234);
  V joined;
  for (const auto& p : parts)
    for (auto id : all_ids(*p)) joined.push_back(id);
  CHECK(joined == perm);
  // The same seed gives the same parts on every rank; another seed another order.
  CHECK(all_ids(*partition(ds, {0.5, 0.5}, 1234)[1]) == all_ids(*partition(ds, {0.5, 0.5}, 1234)[1]));
  CHECK(all_ids(*partition(ds, {1.0}, 1)[0]) != all_ids(*partition(ds, {1.0}, 2)[0]));
  CHECK(cohort::testing::error_of([&] { partition(ds, {0.7, 0.4}); }).find("sum to 1.1") !=
        std::string::npos);
  CHECK(cohort::testing::error_of([&] { partition(ds, {0.0}); }).find("fraction 0 is 0") !=
        std::string::npos);
}
