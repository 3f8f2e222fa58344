// DataLoader::regroup (elastic training): a group that changes mid-epoch still sees each step's
// global batch exactly, each sample once, at the weights that make the ranks' average the batch's
// mean; checked against the loaders of the full group, sample by sample.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "../common/testing.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/devices.hpp"
#include "ids_dataset.hpp"

using cohort::testing::error_of;
using namespace cohort::data;

namespace {
std::vector<std::unique_ptr<DataLoader>> loaders(std::int64_t n, int world, bool prefetch) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 7;
  o.prefetch = prefetch;
  std::vector<std::unique_ptr<DataLoader>> out;
  for (int r = 0; r < world; ++r) {
    out.push_back(std::make_unique<DataLoader>(std::make_shared<data_test::Ids>(n), o,
                                               std::vector<TransformPtr>{}, cohort::host_device()));
    out.back()->shard(r, world);
    out.back()->set_epoch(3);
  }
  return out;
}
}  // namespace

TEST_CASE("regroup: every global batch exactly the full group's, each sample once, weighted") {
  for (const bool prefetch : {false, true}) {
    // 50 samples over 3 ranks: padded to 51, 17 per rank, batches of 4 (the last one 1 row).
    auto full = loaders(50, 3, prefetch);
    auto group = loaders(50, 3, prefetch);  // launch ranks 0, 1, 2; rank 1 is lost at batch 2
    const std::int64_t nb = full[0]->num_batches();
    REQUIRE(nb == 5);
    std::vector<int> members = {0, 1, 2};
    for (std::int64_t k = 0; k < nb; ++k) {
      if (k == 2) {  // 3 -> 2 ranks: launch ranks 0 and 2
        members = {0, 2};
        group[0]->regroup(0, 2);
        group[2]->regroup(1, 2);
      }
      if (k == 4) {  // 2 -> 1 rank: launch rank 2 alone
        members = {2};
        group[2]->regroup(0, 1);
      }
      std::multiset<std::int64_t> want, got;
      for (auto& l : full) {
        Batch b;
        REQUIRE(l->next(b));
        CHECK(b.weight == 1.0);
        want.insert(b.samples.begin(), b.samples.end());
      }
      double weighted = 0;
      for (int m : members) {
        Batch b;
        REQUIRE(group[static_cast<std::size_t>(m)]->next(b));
        CHECK(b.index == k);
        const auto px = b.images.to_vector<float>();
        REQUIRE(px.size() == b.samples.size());
        for (std::size_t i = 0; i < px.size(); ++i)
          CHECK(px[i] == static_cast<float>(b.samples[i]));  // the rows are those samples
        if (b.weight > 0) got.insert(b.samples.begin(), b.samples.end());
        // rows x ranks / the global batch's rows
        if (b.weight > 0)
          CHECK(b.weight == doctest::Approx(static_cast<double>(b.samples.size() * members.size()) /
                                            static_cast<double>(want.size())));
        // A per-sample "loss" (the pixel, i.e. the index): this rank's mean of it, weighted.
        double mean = 0;
        for (const float v : px) mean += v;
        weighted += b.weight * mean / static_cast<double>(px.size());
      }
      CHECK(got == want);  // the same global batch, each sample once
      // What DDP computes (the ranks' weighted means, averaged) is the global batch's mean.
      double global = 0;
      for (const auto v : want) global += static_cast<double>(v);
      CHECK(weighted / static_cast<double>(members.size()) ==
            doctest::Approx(global / static_cast<double>(want.size())));
    }
    for (int m : members) {
      Batch b;
      CHECK_FALSE(group[static_cast<std::size_t>(m)]->next(b));
    }
  }
}

TEST_CASE("regroup: a rank left without a sample runs a stand-in at weight 0") {
  // 2 samples over 2 ranks, batch 1: global batches of 2; regrouped to 3 ranks, one gets none.
  auto g = loaders(2, 2, false);
  auto extra = loaders(2, 2, false);
  g[0]->regroup(0, 3);
  g[1]->regroup(1, 3);
  extra[0]->regroup(2, 3);
  Batch a, b, c;
  REQUIRE(g[0]->next(a));
  REQUIRE(g[1]->next(b));
  REQUIRE(extra[0]->next(c));
  CHECK(a.weight == doctest::Approx(1.5));  // 1 row x 3 ranks / 2
  CHECK(b.weight == doctest::Approx(1.5));
  CHECK(c.weight == 0.0);
  CHECK(c.samples.size() == 1);
  CHECK(c.samples[0] == a.samples[0]);  // the global batch's first sample, counted by nobody
}

TEST_CASE("regroup to the sharding's own rank and world serves the shard unchanged") {
  auto a = loaders(37, 2, false), b = loaders(37, 2, false);
  b[1]->regroup(1, 2);
  Batch x, y;
  while (a[1]->next(x)) {
    REQUIRE(b[1]->next(y));
    CHECK(x.samples == y.samples);
    CHECK(y.weight == 1.0);
  }
  CHECK_FALSE(b[1]->next(y));
  CHECK(b[1]->group_world() == 2);
}

TEST_CASE("regroup: bad ranks are named") {
  auto l = loaders(10, 2, false);
  CHECK(error_of([&] {
          l[0]->regroup(2, 2);
        }).find("DataLoader::regroup: rank 2 of 2 ranks is not a rank of that group") !=
        std::string::npos);
  CHECK(error_of([&] { l[0]->regroup(0, 0); }).find("rank 0 of 0 ranks") != std::string::npos);
  CHECK(l[0]->group_world() == 2);
}
