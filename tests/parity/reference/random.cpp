// Reference of the Philox-based fills (fill_uniform, fill_normal) and the generator behind them
// and dropout: Philox4x32-10 as the paper defines it (Salmon, Moraes, Dror, Shaw, "Parallel
// random numbers: as easy as 1, 2, 3", SC'11), checked against Random123's known-answer vectors
// before any row uses it, and the stream layout cohort documents (cohort/core/rng.hpp).
#include <cmath>

#include "reference.hpp"

namespace parity_ref {

std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> x,
                                           std::array<std::uint32_t, 2> key) {
  // Round function: two 32x32 -> 64-bit products; the high halves are mixed with the other two
  // words and the key, the low halves carried; the key is bumped by the Weyl constants.
  const std::uint64_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += 0x9E3779B9u;  // golden ratio
      key[1] += 0xBB67AE85u;  // sqrt(3) - 1
    }
    const std::uint64_t p0 = M0 * x[0], p1 = M1 * x[2];
    x = {static_cast<std::uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<std::uint32_t>(p0)};
  }
  return x;
}

bool philox_known_answers() {
  // Random123 1.09, tests/kat_vectors: philox4x32 10 rounds.
  struct Kat {
    std::array<std::uint32_t, 4> ctr;
    std::array<std::uint32_t, 2> key;
    std::array<std::uint32_t, 4> out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats)
    if (philox4x32_10(k.ctr, k.key) != k.out) return false;
  return true;
}

double unit_at(std::uint64_t seed, std::uint64_t p, bool open0) {
  const std::uint64_t block = p / 4;
  const auto r = philox4x32_10(
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  const double bits24 = static_cast<double>(r[p % 4] >> 8);
  return (bits24 + (open0 ? 1.0 : 0.0)) / 16777216.0;
}

// lo + (hi - lo) u evaluated in f32 as rng.hpp states it, one rounding per operation (u itself is
// exact: 24 bits).
Vec uniform(std::size_t n, std::uint64_t seed, std::uint64_t offset, double lo, double hi) {
  Vec out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = f32(lo + f32(f32(hi - lo) * unit_at(seed, offset + i)));
  return out;
}

Vec normal(std::size_t n, std::uint64_t seed, std::uint64_t offset, double mean, double stddev) {
  const double two_pi = 6.283185307179586476925;
  Vec out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t p = offset + i;
    const std::uint64_t first = p - p % 2;  // the pair's first lane: (0, 1) or (2, 3)
    const double u1 = unit_at(seed, first, true), u2 = unit_at(seed, first + 1);
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double z = p % 2 == 0 ? r * std::cos(two_pi * u2) : r * std::sin(two_pi * u2);
    out[i] = mean + stddev * z;
  }
  return out;
}

}  // namespace parity_ref
