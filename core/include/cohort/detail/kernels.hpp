// Element-wise math written once. Every backend applies these functors: the host backend from a
// Kokkos parallel_for, the CUDA backend from its own kernels, so CPU-only CI exercises exactly the
// arithmetic the GPU runs. Nothing here may allocate, throw or call the standard library beyond
// <cstdint>/<cmath> functions that nvcc also provides on the device.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define COHORT_HD __host__ __device__ __forceinline__
#else
#define COHORT_HD inline
#endif

namespace cohort::kernels {

struct Add { COHORT_HD float operator()(float a, float b) const { return a + b; } };
struct Sub { COHORT_HD float operator()(float a, float b) const { return a - b; } };
struct Mul { COHORT_HD float operator()(float a, float b) const { return a * b; } };
struct Scale {
  float alpha;
  COHORT_HD float operator()(float x) const { return alpha * x; }
};
struct Axpy {  // y' = y + alpha x
  float alpha;
  COHORT_HD float operator()(float x, float y) const { return y + alpha * x; }
};

// ---- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) ----
struct U32x4 { std::uint32_t v[4]; };

COHORT_HD void mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

COHORT_HD U32x4 philox4x32_10(U32x4 ctr, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, ctr.v[0], hi0, lo0);
    mulhilo32(0xCD9E8D57u, ctr.v[2], hi1, lo1);
    U32x4 next;
    next.v[0] = hi1 ^ ctr.v[1] ^ k0;
    next.v[1] = lo1;
    next.v[2] = hi0 ^ ctr.v[3] ^ k1;
    next.v[3] = lo0;
    ctr = next;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// The four 32-bit words of stream block `block` under `seed` (key = seed's two halves,
// counter = {block lo, block hi, 0, 0}). Stream position p lives in block p / 4, lane p % 4.
COHORT_HD U32x4 philox_block(std::uint64_t seed, std::uint64_t block) {
  U32x4 ctr{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u}};
  return philox4x32_10(ctr, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// 24 random bits -> [0, 1), exactly representable in f32.
COHORT_HD float u32_to_unit(std::uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
// 24 random bits -> (0, 1], safe for log().
COHORT_HD float u32_to_unit_open0(std::uint32_t x) {
  return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

struct UniformAt {  // value at stream position p
  std::uint64_t seed;
  float lo, hi;
  COHORT_HD float operator()(std::uint64_t p) const {
    const U32x4 r = philox_block(seed, p >> 2);
    return lo + (hi - lo) * u32_to_unit(r.v[p & 3]);
  }
};

// Box-Muller on lane pairs (0,1) and (2,3) of a block: even lanes take the cosine, odd the sine.
struct NormalAt {
  std::uint64_t seed;
  float mean, stddev;
  COHORT_HD float operator()(std::uint64_t p) const {
    const U32x4 r = philox_block(seed, p >> 2);
    const unsigned lane = static_cast<unsigned>(p & 3);
    const unsigned pair = lane & 2u;
    const float u1 = u32_to_unit_open0(r.v[pair]);
    const float u2 = u32_to_unit(r.v[pair + 1]);
    const float radius = sqrtf(-2.0f * logf(u1));
    const float theta = 6.28318530717958647692f * u2;
    const float z = (lane & 1u) ? radius * sinf(theta) : radius * cosf(theta);
    return mean + stddev * z;
  }
};

}  // namespace cohort::kernels
