// Philox4x32-10 against the Random123 known-answer vectors, and the stream properties the
// device fills promise (same seed -> same numbers, any split of a fill -> the same numbers).
#include <doctest/doctest.h>

#include <cmath>

#include "cohort/core/tensor.hpp"
#include "cohort/core/rng.hpp"
#include "cohort/devices.hpp"

using cohort::Tensor;
namespace k = cohort::rng;

TEST_CASE("philox4x32-10 known-answer vectors (Random123 kat_vectors)") {
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const auto& kat : kats) {
    k::U32x4 ctr{{kat.ctr[0], kat.ctr[1], kat.ctr[2], kat.ctr[3]}};
    const k::U32x4 r = k::philox4x32_10(ctr, kat.key[0], kat.key[1]);
    for (int i = 0; i < 4; ++i) CHECK(r.v[i] == kat.out[i]);
  }
}

TEST_CASE("uniform fills: range, moments, reproducibility and split invariance") {
  auto& dev = cohort::host_device();
  const std::int64_t n = 200001;
  Tensor u = Tensor::uniform({n}, -1.0f, 3.0f, 42, dev);
  const auto v = u.to_vector<float>();
  double mean = 0;
  for (float x : v) {
    REQUIRE(x >= -1.0f);
    REQUIRE(x < 3.0f);
    mean += x;
  }
  mean /= n;
  CHECK(mean == doctest::Approx(1.0).epsilon(0.01));  // 4 / sqrt(12 n) ~ 0.003 standard error
  CHECK(Tensor::uniform({n}, -1.0f, 3.0f, 42, dev).to_vector<float>() == v);
  CHECK(Tensor::uniform({n}, -1.0f, 3.0f, 43, dev).to_vector<float>() != v);
  // Two fills at offsets 0 and 1000 reproduce one fill of the whole range.
  Tensor head = Tensor::uniform({1000}, -1.0f, 3.0f, 42, dev, 0);
  Tensor tail = Tensor::uniform({n - 1000}, -1.0f, 3.0f, 42, dev, 1000);
  auto hv = head.to_vector<float>();
  const auto tv = tail.to_vector<float>();
  hv.insert(hv.end(), tv.begin(), tv.end());
  CHECK(hv == v);
  // Element 5 is lane 1 of block 1 under key (42, 0).
  const k::U32x4 blk = k::philox_block(42, 1);
  CHECK(v[5] == -1.0f + 4.0f * static_cast<float>(blk.v[1] >> 8) / 16777216.0f);
}

TEST_CASE("normal fills: moments and split invariance") {
  auto& dev = cohort::host_device();
  const std::int64_t n = 400000;
  const auto v = Tensor::normal({n}, 2.0f, 0.5f, 7, dev).to_vector<float>();
  double mean = 0, var = 0;
  for (float x : v) mean += x;
  mean /= n;
  for (float x : v) var += (x - mean) * (x - mean);
  var /= n - 1;
  CHECK(mean == doctest::Approx(2.0).epsilon(0.005));
  CHECK(std::sqrt(var) == doctest::Approx(0.5).epsilon(0.01));
  const auto part = Tensor::normal({10}, 2.0f, 0.5f, 7, dev, 3).to_vector<float>();
  for (int i = 0; i < 10; ++i) CHECK(part[static_cast<std::size_t>(i)] == v[static_cast<std::size_t>(i + 3)]);
}
