// The DataLoader's decoding-worker pool (data/src/workers.hpp) alone, with a sample builder that
// needs no data set: rows land in row order whatever thread built them, the lowest failing row's
// error wins, and a stuck worker turns into a timeout that names what each worker is doing.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../common/testing.hpp"
#include "cohort/core/error.hpp"
#include "workers.hpp"

using cohort::testing::error_of;
using cohort::data::detail::WorkerPool;
using namespace std::chrono_literals;

namespace {

// Row r of sample s: {s, s + 0.5, r}, label s * 10.
std::int64_t fill(std::int64_t sample, std::int64_t row, float* dst) {
  dst[0] = static_cast<float>(sample);
  dst[1] = static_cast<float>(sample) + 0.5f;
  dst[2] = static_cast<float>(row);
  return sample * 10;
}

}  // namespace

TEST_CASE("WorkerPool: every row lands in its place, whatever thread built it") {
  std::atomic<int> calls{0};
  WorkerPool pool(3, 3, 4,
                  [&](std::int64_t s, std::int64_t r, std::int64_t, std::int64_t, float* a,
                      float* b, float* dst) {
                    CHECK(a != nullptr);
                    CHECK(b != nullptr);
                    ++calls;
                    return fill(s, r, dst);
                  },
                  0);
  pool.start();
  const std::vector<std::int64_t> samples = {7, 3, 11, 0, 5, 9, 2};
  const auto n = static_cast<std::int64_t>(samples.size());
  for (int batch = 0; batch < 4; ++batch) {
    std::vector<float> out(samples.size() * 3, -1.0f);
    std::vector<std::int64_t> labels(samples.size(), -1);
    pool.assemble(samples.data(), n, batch, 0, out.data(), labels.data(), 10s);
    for (std::int64_t r = 0; r < n; ++r) {
      const auto s = samples[static_cast<std::size_t>(r)];
      CHECK(out[static_cast<std::size_t>(3 * r)] == static_cast<float>(s));
      CHECK(out[static_cast<std::size_t>(3 * r + 1)] == static_cast<float>(s) + 0.5f);
      CHECK(out[static_cast<std::size_t>(3 * r + 2)] == static_cast<float>(r));
      CHECK(labels[static_cast<std::size_t>(r)] == s * 10);
    }
  }
  CHECK(calls == 4 * n);
}

TEST_CASE("WorkerPool: the lowest failing row's error is the one reported") {
  // Rows 2 and 5 fail; row 5 may fail first, but row 2 was claimed before it and wins.
  WorkerPool pool(4, 3, 3,
                  [](std::int64_t s, std::int64_t r, std::int64_t, std::int64_t, float*, float*,
                     float* dst) -> std::int64_t {
                    if (r == 2 || r == 5) COHORT_FAIL("row ", r, " is broken");
                    return fill(s, r, dst);
                  },
                  0);
  pool.start();
  const std::vector<std::int64_t> samples = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> out(samples.size() * 3);
  std::vector<std::int64_t> labels(samples.size());
  for (int attempt = 0; attempt < 20; ++attempt)
    CHECK(error_of([&] {
            pool.assemble(samples.data(), static_cast<std::int64_t>(samples.size()), attempt, 0,
                          out.data(), labels.data(), 10s);
          }).find("row 2 is broken") != std::string::npos);
}

TEST_CASE("WorkerPool: a stuck worker becomes a timeout naming each worker, and stop() ends") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  WorkerPool pool(2, 3, 3,
                  [&](std::int64_t s, std::int64_t r, std::int64_t, std::int64_t, float*, float*,
                      float* dst) {
                    if (s == 42) {  // stuck until released
                      std::unique_lock<std::mutex> lock(mu);
                      cv.wait(lock, [&] { return release; });
                    }
                    return fill(s, r, dst);
                  },
                  3);
  pool.start();
  const std::vector<std::int64_t> samples = {42};
  std::vector<float> out(3);
  std::vector<std::int64_t> labels(1);
  const std::string msg = error_of(
      [&] { pool.assemble(samples.data(), 1, 6, 2, out.data(), labels.data(), 100ms); });
  CHECK(msg.find("DataLoader (rank 3): only 0 of the 1 samples of batch 6 of epoch 2") !=
        std::string::npos);
  CHECK(msg.find("on sample 42 of batch 6") != std::string::npos);
  CHECK(msg.find("idle") != std::string::npos);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  pool.stop();  // joins the worker that was stuck
  CHECK(error_of([&] {
          pool.assemble(samples.data(), 1, 7, 2, out.data(), labels.data(), 10s);
        }).find("destroyed while batch 7") != std::string::npos);
}
