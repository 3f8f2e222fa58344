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

namespace {
// The samples the full group's loaders serve in an epoch, in the sampler's order (rank r of W
// holds elements r, r + W, ... of each global batch).
std::vector<std::int64_t> epoch_order(std::vector<std::unique_ptr<DataLoader>>& full) {
  std::vector<std::int64_t> order;
  for (;;) {
    std::vector<Batch> parts(full.size());
    bool any = false;
    for (std::size_t r = 0; r < full.size(); ++r) any |= full[r]->next(parts[r]);
    if (!any) return order;
    for (std::size_t j = 0;; ++j) {
      bool more = false;
      for (const auto& p : parts)
        if (j < p.samples.size()) {
          order.push_back(p.samples[j]);
          more = true;
        }
      if (!more) break;
    }
  }
}
}  // namespace

TEST_CASE(
    "regroup keeping each rank's batch: the rest of the epoch in global batches of the "
    "new group, in order, each sample once; the layout moves to a joiner") {
  // 48 samples over 3 ranks, batch 4: global batches of 12, 4 per epoch.
  auto full = loaders(48, 3, false);
  const std::vector<std::int64_t> order = epoch_order(full);
  REQUIRE(order.size() == 48);
  auto group = loaders(48, 3, true);
  CHECK(group[0]->global_batch_samples(1) ==
        std::vector<std::int64_t>(order.begin() + 12, order.begin() + 24));
  std::vector<std::int64_t> seen;
  const auto step = [&](const std::vector<int>& members) {
    std::vector<Batch> parts;
    for (int m : members) {
      parts.emplace_back();
      REQUIRE(group[static_cast<std::size_t>(m)]->next(parts.back()));
      CHECK(parts.back().weight == 1.0);
    }
    std::vector<std::int64_t> batch;
    for (const auto& p : parts) batch.insert(batch.end(), p.samples.begin(), p.samples.end());
    return batch;
  };
  // Batch 0 with 3 ranks; from batch 1 on, launch ranks 0 and 2 (global batch 8).
  auto b0 = step({0, 1, 2});
  seen.insert(seen.end(), b0.begin(), b0.end());
  group[0]->regroup(0, 2, true);
  group[2]->regroup(1, 2, true);
  CHECK(group[0]->num_batches() == 1 + 36 / 8 + 1);  // 36 left: 4 batches of 8, one of 4
  CHECK(group[0]->layout() == "1:12:8");             // batch 0: the shards' own layout
  for (int k = 0; k < 2; ++k) {
    auto b = step({0, 2});
    CHECK(b.size() == 8);
    seen.insert(seen.end(), b.begin(), b.end());
  }
  // Launch rank 1 joins at batch 3 (28 samples done): the members regroup, the joiner takes the
  // layout (as the Trainer moves it in the state) and starts there.
  group[0]->regroup(0, 3, true);
  group[2]->regroup(1, 3, true);
  const std::string layout = group[0]->layout();
  CHECK(layout == "1:12:8;3:28:12");
  CHECK(group[0]->global_batch_samples(3) ==
        std::vector<std::int64_t>(order.begin() + 28, order.begin() + 40));
  auto joiner = loaders(48, 3, true);
  joiner[1]->regroup(2, 3, true);
  joiner[1]->set_layout(layout);
  joiner[1]->set_epoch(3, 3);
  group[1] = std::move(joiner[1]);
  CHECK(group[1]->num_batches() == 5);  // 20 left: 12 and 8
  while (true) {
    std::vector<std::int64_t> b;
    Batch x;
    bool any = false;
    for (int m : {0, 2, 1})
      if (group[static_cast<std::size_t>(m)]->next(x)) {
        any = true;
        b.insert(b.end(), x.samples.begin(), x.samples.end());
      }
    if (!any) break;
    seen.insert(seen.end(), b.begin(), b.end());
  }
  // Each global batch a consecutive piece of the order, so all of it, each once, in order.
  std::vector<std::int64_t> a = seen, want = order;
  CHECK(a.size() == want.size());
  std::sort(a.begin(), a.end());
  std::sort(want.begin(), want.end());
  CHECK(a == want);
  // The next epoch from its start keeps the last global batch size.
  group[0]->set_epoch(4);
  CHECK(group[0]->layout() == "0:0:12");
}

TEST_CASE("set_layout and global_batch_samples: bad input named") {
  auto g = loaders(48, 3, false);
  CHECK(error_of([&] { g[0]->set_layout("0:0"); }).find("'0:0' of '0:0' is not a segment") !=
        std::string::npos);
  CHECK(error_of([&] { g[0]->set_layout("0:0:12;0:5:8"); }).find("after the previous one") !=
        std::string::npos);
  CHECK(error_of([&] { g[0]->set_layout("0:0:0"); }).find("not a segment") != std::string::npos);
  CHECK(error_of([&] { g[0]->set_layout("0:0:12;2:999:8"); }).find("past the epoch's 48") !=
        std::string::npos);
  CHECK(error_of([&] { g[0]->global_batch_samples(4); }).find("outside the epoch's 0..3") !=
        std::string::npos);
  g[0]->set_layout("");  // the shards' own
  CHECK(g[0]->layout().empty());
}
