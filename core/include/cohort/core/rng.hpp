// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the one
// counter-based generator behind every random number cohort draws: parameter init, dropout masks,
// data shuffling, augmentation, synthetic data. A number is a pure function of (seed, position),
// so any device, thread or rank computes the same value for the same position without sharing
// state.
//
// Why constexpr and nothing else: the device kernels (backends/common) call these from GPU code.
// nvcc accepts calls to constexpr functions from device code (--expt-relaxed-constexpr), so this
// public header stays plain C++ with no __host__ __device__ annotations.
#pragma once

#include <cstdint>

namespace cohort::rng {

struct U32x4 {
  std::uint32_t v[4];
};

constexpr void mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

constexpr U32x4 philox4x32_10(U32x4 ctr, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0 = 0, lo0 = 0, hi1 = 0, lo1 = 0;
    mulhilo32(0xD2511F53u, ctr.v[0], hi0, lo0);
    mulhilo32(0xCD9E8D57u, ctr.v[2], hi1, lo1);
    const U32x4 next{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    ctr = next;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// The four 32-bit words of stream block `block` under `seed` (key = seed's two halves,
// counter = {block lo, block hi, 0, 0}). Stream position p lives in block p / 4, lane p % 4.
constexpr U32x4 philox_block(std::uint64_t seed, std::uint64_t block) {
  return philox4x32_10(
      U32x4{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u}},
      static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// 24 random bits -> [0, 1), exactly representable in f32.
constexpr float u32_to_unit(std::uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}
// 24 random bits -> (0, 1], safe for log().
constexpr float u32_to_unit_open0(std::uint32_t x) {
  return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

// The uniform number in [lo, hi) at stream position p under `seed` (Tensor::uniform's values).
constexpr float uniform_at(std::uint64_t seed, std::uint64_t p, float lo, float hi) {
  return lo + (hi - lo) * u32_to_unit(philox_block(seed, p >> 2).v[p & 3]);
}

}  // namespace cohort::rng
