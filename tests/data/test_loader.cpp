// DistributedSampler against PyTorch's split and padding rules (hand-derived from
// torch/utils/data/distributed.py), the DataLoader's coverage, ordering, prefetching and error
// propagation, and the transforms against hand-computed values.
#include <doctest/doctest.h>

#include "../common/testing.hpp"

using cohort::testing::error_of;

#include <algorithm>
#include <functional>
#include <set>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "cohort/core/timeout.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "../common/lazy_stream_device.hpp"
#include "../common/remote_device.hpp"

using namespace cohort::data;
using V = std::vector<std::int64_t>;

namespace {

// Sample i has every pixel equal to i and label i % 10: batches reveal exactly which samples
// they hold. Sample `fail_at` cannot be read; sample `bad_label_at` has label 12 (of 10 classes).
class CountingDataset final : public Dataset {
 public:
  explicit CountingDataset(std::int64_t n, std::int64_t fail_at = -1, std::int64_t bad_label_at = -1)
      : n_(n), fail_at_(fail_at), bad_label_at_(bad_label_at) {}
  std::int64_t size() const override { return n_; }
  cohort::Shape sample_shape() const override { return {1, 2, 3}; }
  std::int64_t num_classes() const override { return 10; }
  std::int64_t get(std::int64_t i, float* out) const override {
    COHORT_CHECK(i != fail_at_, "CountingDataset: sample ", i, " is unreadable");
    for (int k = 0; k < 6; ++k) out[k] = static_cast<float>(i);
    return i == bad_label_at_ ? 12 : i % 10;
  }
  std::string describe() const override { return "counting"; }

 private:
  std::int64_t n_, fail_at_, bad_label_at_;
};

std::vector<V> epoch_samples(DataLoader& loader) {
  std::vector<V> out;
  Batch b;
  while (loader.next(b)) {
    V s;
    const auto px = b.images.to_vector<float>();
    const auto labels = b.labels.to_vector<std::int64_t>();
    const std::int64_t per = 6;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const auto id = static_cast<std::int64_t>(px[i * per]);
      CHECK(labels[i] == id % 10);
      s.push_back(id);
    }
    out.push_back(s);
  }
  return out;
}
}  // namespace

TEST_CASE("DistributedSampler: torch's split and padding rules without shuffling") {
  auto shard = [](std::int64_t n, int R, int r, bool drop) {
    return DistributedSampler(n, R, r, false, 0, drop).indices();
  };
  // n = 10, 3 replicas: 4 each, padded with 0, 1.
  CHECK(shard(10, 3, 0, false) == V{0, 3, 6, 9});
  CHECK(shard(10, 3, 1, false) == V{1, 4, 7, 0});
  CHECK(shard(10, 3, 2, false) == V{2, 5, 8, 1});
  // drop_last: ceil((10 - 3) / 3) = 3 each, tail dropped.
  CHECK(shard(10, 3, 0, true) == V{0, 3, 6});
  CHECK(shard(10, 3, 2, true) == V{2, 5, 8});
  // padding longer than the list repeats it.
  CHECK(shard(1, 4, 3, false) == V{0});
  CHECK(shard(2, 4, 3, false) == V{1});
  CHECK(shard(3, 2, 1, false) == V{1, 0});
  CHECK(DistributedSampler(0, 2, 1, false).indices().empty());
  CHECK(error_of([] { DistributedSampler(10, 2, 2); }).find("rank 2 out of range [0, 1]") !=
        std::string::npos);
  CHECK(error_of([] { DistributedSampler(10, 0, 0); }).find("number of replicas 0") !=
        std::string::npos);
}

TEST_CASE("DistributedSampler: shuffled shards partition the data and change per epoch") {
  const std::int64_t n = 1001;
  std::set<std::int64_t> seen;
  std::int64_t total = 0;
  for (int r = 0; r < 4; ++r) {
    DistributedSampler s(n, 4, r, true, 42);
    s.set_epoch(3);
    const auto idx = s.indices();
    CHECK(static_cast<std::int64_t>(idx.size()) == 251);
    total += static_cast<std::int64_t>(idx.size());
    seen.insert(idx.begin(), idx.end());
  }
  CHECK(total == 1004);  // 3 padded
  CHECK(static_cast<std::int64_t>(seen.size()) == n);
  DistributedSampler a(n, 1, 0, true, 42), b(n, 1, 0, true, 42);
  CHECK(a.indices() == b.indices());
  b.set_epoch(1);
  CHECK(a.indices() != b.indices());
  auto p = permutation(n, 5);
  std::sort(p.begin(), p.end());
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(p[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("DataLoader: batches cover the shard once, in order, with and without prefetch") {
  auto& host = cohort::host_device();
  auto ds = std::make_shared<CountingDataset>(23);
  for (bool prefetch : {false, true}) {
    CAPTURE(prefetch);
    DataLoaderOptions o;
    o.batch_size = 5;
    o.prefetch = prefetch;
    DataLoader loader(ds, o, {}, host);
    CHECK(loader.num_batches() == 5);
    const auto e0 = epoch_samples(loader);
    REQUIRE(e0.size() == 5);
    CHECK(e0[0] == V{0, 1, 2, 3, 4});
    CHECK(e0[4] == V{20, 21, 22});
    Batch b;
    CHECK(!loader.next(b));  // exhausted until the next epoch
    o.drop_last = true;
    DataLoader dropping(ds, o, {}, host);
    CHECK(dropping.num_batches() == 4);
    CHECK(epoch_samples(dropping).size() == 4);
  }
}

TEST_CASE("DataLoader: an epoch started at batch k serves what batches k.. of the full epoch were") {
  auto& host = cohort::host_device();
  auto ds = std::make_shared<CountingDataset>(47);
  for (const bool prefetch : {false, true})
    for (const int workers : {0, 2}) {
      CAPTURE(prefetch);
      CAPTURE(workers);
      DataLoaderOptions o;
      o.batch_size = 5;
      o.shuffle = true;
      o.seed = 9;
      o.prefetch = prefetch;
      o.num_workers = workers;
      DataLoader loader(ds, o, {}, host);
      loader.shard(1, 2);  // a resumed rank's shard
      loader.set_epoch(3);
      const auto full = epoch_samples(loader);
      REQUIRE(full.size() == 5);
      for (std::int64_t k : {0, 1, 4, 5}) {
        CAPTURE(k);
        loader.set_epoch(3, k);
        const auto rest = epoch_samples(loader);
        CHECK(rest == std::vector<V>(full.begin() + k, full.end()));
      }
      CHECK(error_of([&] { loader.set_epoch(3, 6); })
                .find("first batch 6 is outside the epoch's 0..5 batches") != std::string::npos);
      CHECK(error_of([&] { loader.set_epoch(3, -1); }).find("first batch -1") != std::string::npos);
    }
}

TEST_CASE("DataLoader: shuffling is seeded, per epoch, identical with prefetch; shards per rank") {
  auto& host = cohort::host_device();
  auto ds = std::make_shared<CountingDataset>(50);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 9;
  DataLoader a(ds, o, {}, host);
  o.prefetch = false;
  DataLoader b(ds, o, {}, host);
  const auto a0 = epoch_samples(a), b0 = epoch_samples(b);
  CHECK(a0 == b0);
  a.set_epoch(1);
  const auto a1 = epoch_samples(a);
  CHECK(a1 != a0);
  a.set_epoch(0);
  CHECK(epoch_samples(a) == a0);
  // Two ranks see disjoint halves.
  std::set<std::int64_t> all;
  for (int r = 0; r < 2; ++r) {
    DataLoaderOptions ro = o;
    ro.rank = r;
    ro.world_size = 2;
    DataLoader l(ds, ro, {}, host);
    CHECK(l.num_samples() == 25);
    for (const auto& batch : epoch_samples(l)) all.insert(batch.begin(), batch.end());
  }
  CHECK(all.size() == 50);
}

TEST_CASE("DataLoader: restarting an epoch mid-way and errors from the prefetch thread") {
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader l(std::make_shared<CountingDataset>(20), o, {}, host);
  Batch b;
  REQUIRE(l.next(b));
  REQUIRE(l.next(b));
  l.set_epoch(0);
  const auto again = epoch_samples(l);
  REQUIRE(again.size() == 5);
  CHECK(again[0] == V{0, 1, 2, 3});

  DataLoader bad(std::make_shared<CountingDataset>(20, 9), o, {}, host);
  REQUIRE(bad.next(b));
  REQUIRE(bad.next(b));
  CHECK(error_of([&] { bad.next(b); }).find("sample 9 is unreadable") != std::string::npos);
  o.batch_size = 0;
  CHECK(error_of([&] { DataLoader(std::make_shared<CountingDataset>(3), o, {}, host); })
            .find("batch size must be >= 1, got 0") != std::string::npos);
}

TEST_CASE("transforms: normalize, crop and flip against hand-computed values") {
  auto& host = cohort::host_device();
  const float in[6] = {1, 2, 3, 4, 5, 6};  // [1, 2, 3]
  float out[6];
  normalize({2.0f}, {0.5f})->apply(in, {1, 2, 3}, out, 0);
  CHECK(std::vector<float>(out, out + 6) == std::vector<float>{-2, 0, 2, 4, 6, 8});
  // Flip with p = 1 always mirrors; p = 0 never does.
  random_horizontal_flip(1.0f)->apply(in, {1, 2, 3}, out, 123);
  CHECK(std::vector<float>(out, out + 6) == std::vector<float>{3, 2, 1, 6, 5, 4});
  random_horizontal_flip(0.0f)->apply(in, {1, 2, 3}, out, 123);
  CHECK(std::vector<float>(out, out + 6) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // A 2x2 crop of the zero-padded 4x5 sample: every crop is a window of the padded image.
  auto crop = random_crop(2, 1);
  CHECK(crop->output_shape({1, 2, 3}) == cohort::Shape{1, 2, 2});
  std::set<std::vector<float>> windows;
  for (std::uint64_t key = 0; key < 200; ++key) {
    float c[4];
    crop->apply(in, {1, 2, 3}, c, key);
    windows.insert(std::vector<float>(c, c + 4));
  }
  CHECK(windows.size() == 12);  // (4 - 2 + 1) x (5 - 2 + 1) positions, all reached
  CHECK(windows.count({0, 0, 0, 1}) == 1);
  CHECK(windows.count({5, 6, 0, 0}) == 1);
  CHECK(error_of([&] { normalize({0.1f, 0.2f}, {1.0f, 1.0f})->output_shape({3, 2, 2}); })
            .find("2 channel statistics for a sample with 3 channels") != std::string::npos);
  CHECK(error_of([&] { random_crop(9, 1)->output_shape({1, 2, 3}); })
            .find("crop 9x9 is larger than the padded sample 4x5") != std::string::npos);
  // Through a loader: the same (seed, epoch) gives the same augmented batch.
  auto ds = std::make_shared<SyntheticDataset>(16, cohort::Shape{3, 8, 8}, 4, 1);
  DataLoaderOptions o;
  o.batch_size = 16;
  o.seed = 3;
  std::vector<TransformPtr> ts = {random_crop(8, 2), random_horizontal_flip(), normalize({0.5f}, {0.25f})};
  DataLoader l1(ds, o, ts, host), l2(ds, o, ts, host);
  Batch b1, b2;
  REQUIRE(l1.next(b1));
  REQUIRE(l2.next(b2));
  CHECK(b1.images.shape() == cohort::Shape{16, 3, 8, 8});
  CHECK(b1.images.to_vector<float>() == b2.images.to_vector<float>());
}

TEST_CASE("SyntheticDataset: deterministic, in range, label-dependent") {
  SyntheticDataset a(100, {1, 4, 4}, 3, 7), b(100, {1, 4, 4}, 3, 7);
  std::vector<float> x(16), y(16);
  std::set<std::int64_t> labels;
  for (std::int64_t i = 0; i < 100; ++i) {
    const auto la = a.get(i, x.data());
    CHECK(b.get(i, y.data()) == la);
    CHECK(x == y);
    labels.insert(la);
    for (float v : x) REQUIRE((v >= 0.0f && v < 1.0f));
  }
  CHECK(labels.size() == 3);
  CHECK(error_of([] { SyntheticDataset(1, {4, 4}, 3, 7); }).find("must be [C, H, W]") !=
        std::string::npos);
}

// ---- staged uploads: a device the host cannot address (tests/common/remote_device.hpp) ----

namespace {
// Every batch of `epochs` epochs as host vectors (images, labels), with the batch index.
struct Seen {
  std::vector<std::vector<float>> images;
  std::vector<V> labels;
  V index;
  bool operator==(const Seen& o) const {
    return images == o.images && labels == o.labels && index == o.index;
  }
};
Seen run_epochs(DataLoader& l, int epochs, cohort::Device* expect_on) {
  Seen s;
  Batch b;
  for (int e = 0; e < epochs; ++e) {
    l.set_epoch(e);
    while (l.next(b)) {
      if (expect_on) {
        CHECK(&b.images.device() == expect_on);
        CHECK(&b.labels.device() == expect_on);
      }
      s.images.push_back(b.images.to_vector<float>());
      s.labels.push_back(b.labels.to_vector<std::int64_t>());
      s.index.push_back(b.index);
    }
  }
  return s;
}
}  // namespace

TEST_CASE("DataLoader: staged batches equal the host's and reuse two pinned buffers") {
  auto& host = cohort::host_device();
  auto& remote = cohort::testing::remote_device();
  auto ds = std::make_shared<SyntheticDataset>(50, cohort::Shape{1, 6, 6}, 10, 3);
  const std::vector<TransformPtr> tf = {normalize({0.5f}, {0.25f}), random_crop(6, 1),
                                        random_horizontal_flip()};
  for (const bool prefetch : {true, false}) {
    CAPTURE(prefetch);
    DataLoaderOptions o;
    o.batch_size = 8;  // 7 batches, the last of 2 rows
    o.shuffle = true;
    o.seed = 9;
    o.prefetch = prefetch;
    DataLoader plain(ds, o, tf, host);
    const Seen want = run_epochs(plain, 3, &host);
    REQUIRE(want.index.size() == 21);
    remote.reset();
    {
      DataLoader staged(ds, o, tf, host, &remote);
      CHECK(remote.pinned_allocs == 2);  // two stages, allocated once
      const int readbacks_before = remote.readbacks;
      const Seen got = run_epochs(staged, 3, &remote);
      CHECK(got == want);
      // Uploads: images and labels per batch, asynchronous, on the loader's stream, never a
      // blocking copy; read from the two pinned buffers only. (One batch more when the prefetch
      // thread had uploaded batch 0 before run_epochs' set_epoch(0) restarted the epoch.)
      CHECK(remote.async_uploads >= 2 * 21);
      CHECK(remote.async_uploads <= 2 * 22);
      CHECK(remote.async_on_compute == 0);
      CHECK(remote.blocking_uploads == 0);
      CHECK(remote.pinned_allocs == 2);
      CHECK(remote.uploads_from_pinned());
      CHECK(remote.sources.size() >= 2);  // (images, labels) of one or both stages
      CHECK(remote.sources.size() <= 4);
      CHECK(remote.readbacks - readbacks_before == 2 * 21);  // only this test's to_vector calls
      CHECK(remote.syncs == 0);
    }
    CHECK(remote.pinned_frees == 2);
  }
}

TEST_CASE("DataLoader: staged batches are right under every landing schedule of a lazy device") {
  // The lazy-stream device (tests/common/lazy_stream_device.hpp) lands the uploads at moments of
  // its own and holds the loader to CUDA's rules: the prefetch thread selects the device, no
  // pinned buffer is refilled or freed while an upload still reads it, and the compute side reads
  // a batch only after its upload's event.
  auto& host = cohort::host_device();
  auto& lazy = cohort::testing::lazy_stream_device();
  auto ds = std::make_shared<SyntheticDataset>(50, cohort::Shape{1, 6, 6}, 10, 3);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 4;
  DataLoader plain(ds, o, {normalize({0.5f}, {0.25f})}, host);
  const Seen want = run_epochs(plain, 2, &host);
  for (const std::uint64_t seed : {1, 2, 3, 4}) {
    for (const bool prefetch : {true, false}) {
      CAPTURE(seed);
      CAPTURE(prefetch);
      lazy.reseed(seed);
      o.prefetch = prefetch;
      {
        DataLoader staged(ds, o, {normalize({0.5f}, {0.25f})}, host, &lazy);
        CHECK(run_epochs(staged, 2, &lazy) == want);
      }
      CHECK(lazy.take_violations() == "");
    }
  }
}

TEST_CASE("DataLoader: staged epochs restart mid-way, and a loader dies with a batch in flight") {
  auto& remote = cohort::testing::remote_device();
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 4;
  remote.reset();
  {
    DataLoader l(std::make_shared<CountingDataset>(20), o, {}, host, &remote);
    Batch b;
    REQUIRE(l.next(b));
    REQUIRE(l.next(b));
    l.set_epoch(0);  // the prefetched (and uploaded) third batch is discarded
    const auto again = epoch_samples(l);
    REQUIRE(again.size() == 5);
    CHECK(again[0] == V{0, 1, 2, 3});
    CHECK(again[4] == V{16, 17, 18, 19});
    l.set_epoch(1);
    REQUIRE(l.next(b));  // destroyed with the next batch prefetched
  }
  CHECK(remote.pinned_allocs == 2);
  CHECK(remote.pinned_frees == 2);
}

TEST_CASE("DataLoader: labels are checked on the host, naming the sample, batch and epoch") {
  auto& host = cohort::host_device();
  auto& remote = cohort::testing::remote_device();
  for (cohort::Device* dev : {&host, static_cast<cohort::Device*>(&remote)}) {
    for (const bool prefetch : {true, false}) {
      CAPTURE(dev->name());
      CAPTURE(prefetch);
      DataLoaderOptions o;
      o.batch_size = 4;
      o.prefetch = prefetch;
      DataLoader l(std::make_shared<CountingDataset>(20, -1, 7), o, {}, host, dev);
      Batch b;
      REQUIRE(l.next(b));
      const std::string e = error_of([&] { l.next(b); });
      CHECK_MESSAGE(e.find("DataLoader: sample 7 of counting (row 3 of batch 1, epoch 0) has "
                           "label 12, not a class index in [0, 10)") != std::string::npos,
                    e);
    }
  }
}

// A data set whose sample `stuck_at` takes `delay` to read (a hung network file system, a
// deadlocked transform): next() must give up at its timeout and say what the thread is doing.
class SlowDataset final : public Dataset {
 public:
  SlowDataset(std::int64_t stuck_at, std::chrono::milliseconds delay)
      : stuck_at_(stuck_at), delay_(delay) {}
  std::int64_t size() const override { return 20; }
  cohort::Shape sample_shape() const override { return {1, 2, 3}; }
  std::int64_t num_classes() const override { return 10; }
  std::int64_t get(std::int64_t i, float* out) const override {
    if (i == stuck_at_) std::this_thread::sleep_for(delay_);
    for (int k = 0; k < 6; ++k) out[k] = static_cast<float>(i);
    return i % 10;
  }
  std::string describe() const override { return "slow"; }

 private:
  std::int64_t stuck_at_;
  std::chrono::milliseconds delay_;
};

TEST_CASE("DataLoader: waiting for a batch times out, naming the batch and what the thread does") {
  using namespace std::chrono_literals;
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 5;
  o.timeout = 200ms;
  DataLoader l(std::make_shared<SlowDataset>(7, 1500ms), o, {}, host);  // sample 7: batch 1
  Batch b;
  REQUIRE(l.next(b));  // batch 0
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { l.next(b); });
  const auto took = std::chrono::steady_clock::now() - t0;
  CAPTURE(msg);
  CHECK(msg.find("batch 1 of 4 of epoch 0 was not ready within 200 ms") != std::string::npos);
  CHECK(msg.find("building batch 1 for") != std::string::npos);
  CHECK(took < 1s);
  // The default comes from COHORT_TIMEOUT, validated.
  ::setenv("COHORT_TIMEOUT", "0.25", 1);
  CHECK(cohort::default_timeout() == 250ms);
  ::setenv("COHORT_TIMEOUT", "soon", 1);
  CHECK(error_of([] { cohort::default_timeout(); }).find("COHORT_TIMEOUT='soon'") !=
        std::string::npos);
  ::unsetenv("COHORT_TIMEOUT");
  CHECK(cohort::default_timeout() == 300s);
}

// ---- worker threads (DataLoaderOptions::num_workers) ----

namespace {
// Samples in `bad` cannot be read; reading sample `slow` first sleeps `delay`, so with workers a
// later row can fail before an earlier one.
class FailingDataset final : public Dataset {
 public:
  FailingDataset(std::set<std::int64_t> bad, std::int64_t slow, std::chrono::milliseconds delay)
      : bad_(std::move(bad)), slow_(slow), delay_(delay) {}
  std::int64_t size() const override { return 20; }
  cohort::Shape sample_shape() const override { return {1, 2, 3}; }
  std::int64_t num_classes() const override { return 10; }
  std::int64_t get(std::int64_t i, float* out) const override {
    if (i == slow_) std::this_thread::sleep_for(delay_);
    COHORT_CHECK(bad_.count(i) == 0, "FailingDataset: sample ", i, " is unreadable");
    for (int k = 0; k < 6; ++k) out[k] = static_cast<float>(i);
    return i % 10;
  }
  std::string describe() const override { return "failing"; }

 private:
  std::set<std::int64_t> bad_;
  std::int64_t slow_;
  std::chrono::milliseconds delay_;
};
}  // namespace

TEST_CASE("DataLoader: num_workers gives bit-identical batches, on the host and staged") {
  auto& host = cohort::host_device();
  auto& remote = cohort::testing::remote_device();
  auto ds = std::make_shared<SyntheticDataset>(50, cohort::Shape{3, 8, 8}, 10, 3);
  const std::vector<TransformPtr> tf = {random_crop(6, 2), random_horizontal_flip(),
                                        normalize({0.5f}, {0.25f})};
  DataLoaderOptions o;
  o.batch_size = 8;  // 7 batches, the last of 2 rows
  o.shuffle = true;
  o.seed = 11;
  DataLoader serial(ds, o, tf, host);
  const Seen want = run_epochs(serial, 3, &host);
  REQUIRE(want.index.size() == 21);
  for (const int workers : {1, 2, 3, 16}) {
    for (const bool prefetch : {true, false}) {
      CAPTURE(workers);
      CAPTURE(prefetch);
      DataLoaderOptions w = o;
      w.num_workers = workers;
      w.prefetch = prefetch;
      DataLoader plain(ds, w, tf, host);
      CHECK(run_epochs(plain, 3, &host) == want);
      DataLoader staged(ds, w, tf, host, &remote);
      CHECK(run_epochs(staged, 3, &remote) == want);
    }
  }
  // Restarting an epoch mid-way with workers, and a loader destroyed with a batch in flight.
  DataLoaderOptions w = o;
  w.num_workers = 2;
  {
    DataLoader l(ds, w, tf, host);
    Batch b;
    REQUIRE(l.next(b));
    l.set_epoch(0);
    CHECK(run_epochs(l, 3, &host) == want);
    l.set_epoch(1);
    REQUIRE(l.next(b));
  }
  w.num_workers = -1;
  CHECK(error_of([&] { DataLoader(ds, w, tf, host); })
            .find("num_workers must be >= 0, got -1") != std::string::npos);
}

TEST_CASE("DataLoader: worker errors surface on next(), the batch's first failing row first") {
  using namespace std::chrono_literals;
  auto& host = cohort::host_device();
  for (const bool prefetch : {true, false}) {
    CAPTURE(prefetch);
    DataLoaderOptions o;
    o.batch_size = 5;
    o.num_workers = 3;
    o.prefetch = prefetch;
    // Batch 1 holds samples 5..9: 6 and 7 fail at once, 5 fails after 100 ms. Without workers
    // sample 5 is the error; so with them.
    DataLoader l(std::make_shared<FailingDataset>(std::set<std::int64_t>{5, 6, 7}, 5, 100ms), o,
                 {}, host);
    Batch b;
    REQUIRE(l.next(b));
    const std::string e = error_of([&] { l.next(b); });
    CHECK_MESSAGE(e.find("FailingDataset: sample 5 is unreadable") != std::string::npos, e);
    REQUIRE(l.next(b));  // the loader goes on with the next batch
    CHECK(b.index == 2);
    // A bad label is checked in the worker, with the same message.
    DataLoader labels(std::make_shared<CountingDataset>(20, -1, 7), o, {}, host);
    REQUIRE(labels.next(b));
    const std::string le = error_of([&] { labels.next(b); });
    CHECK_MESSAGE(le.find("DataLoader: sample 7 of counting (row 2 of batch 1, epoch 0) has "
                          "label 12, not a class index in [0, 10)") != std::string::npos,
                  le);
  }
}

TEST_CASE("DataLoader: waiting for the workers times out, naming the batch and each worker") {
  using namespace std::chrono_literals;
  auto& host = cohort::host_device();
  DataLoaderOptions o;
  o.batch_size = 5;
  o.num_workers = 2;
  o.prefetch = false;  // next() waits for the workers itself
  o.timeout = 150ms;
  DataLoader l(std::make_shared<SlowDataset>(7, 700ms), o, {}, host);  // sample 7: batch 1
  Batch b;
  REQUIRE(l.next(b));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { l.next(b); });
  const auto took = std::chrono::steady_clock::now() - t0;
  CAPTURE(msg);
  CHECK(msg.find("only 4 of the 5 samples of batch 1 of epoch 0 were built within 150 ms by the "
                 "2 worker threads") != std::string::npos);
  CHECK(msg.find("on sample 7 of batch 1 for") != std::string::npos);
  CHECK(msg.find(" idle") != std::string::npos);
  CHECK(took < 600ms);
  // The other worker builds the next batch meanwhile.
  REQUIRE(l.next(b));
  CHECK(b.index == 2);
}
