// Element types. f32 is the storage and compute type; integer types carry labels and raw data; bf16
// (the upper half of an f32) and f16 (IEEE 754 binary16) are stored, moved and reduced (in float) so
// that gradients can be compressed and checkpoints read, and under autocast
// (cohort/core/autocast.hpp) convolutions and GEMMs multiply in them (tensors stay f32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

// The 16-bit conversions below are also device code under nvcc (the cast op's CUDA path); an
// annotation only, no CUDA type in this header.
#if defined(__CUDACC__)
#define COHORT_DTYPE_HD __host__ __device__
#else
#define COHORT_DTYPE_HD
#endif

namespace cohort {

// The codes are part of the collectives' fingerprints and of saved files: append, never reorder.
enum class DType : std::uint8_t { f32, f64, bf16, i32, i64, u8, f16 };

std::size_t dtype_size(DType dt);
const char* dtype_name(DType dt);  // "f32", "i64", ...
DType dtype_from_name(const std::string& name);  // throws, listing the known names

// The DType of a C++ element type, for typed accessors: dtype_of<float>() == DType::f32.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::u8; }

// bf16 and f16 conversions, float -> 16 bits rounding to nearest even. NaN stays NaN: quiet, sign
// and the payload's upper bits kept, which is what x86's F16C instructions do (PyTorch's software
// path gives the canonical 0x7e00 instead; both are NaN). f16 overflows to infinity from 65520 up
// and keeps subnormals (no flush to zero). Inline and branch-free so that loops over arrays
// vectorise (the collectives' reduction kernels use them; build those with -fno-trapping-math,
// without which GCC keeps the selects as branches).
COHORT_DTYPE_HD inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const bool nan = (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0;
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(nan ? ((u >> 16) | 0x0040u) : rounded);
}
COHORT_DTYPE_HD inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// After F. Giesen's float_to_half_fast3_rtne: values below 2^-14 (f16 subnormals) are rounded by
// one float addition that lines the 10 mantissa bits up at the bottom (the FPU rounds to nearest
// even there); normal values add the rounding bias to the bits directly.
COHORT_DTYPE_HD inline std::uint16_t float_to_f16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  constexpr std::uint32_t kInfBits = 255u << 23, kF16Overflow = (127u + 16u) << 23;
  constexpr std::uint32_t kDenormMagicBits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  float magic;
  std::memcpy(&magic, &kDenormMagicBits, 4);
  float a;
  std::memcpy(&a, &u, 4);
  a += magic;
  std::uint32_t sub;
  std::memcpy(&sub, &a, 4);
  sub -= kDenormMagicBits;
  const std::uint32_t norm = (u + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
  const std::uint32_t big = u > kInfBits ? 0x7e00u | ((u >> 13) & 0x3ffu) : 0x7c00u;
  const std::uint32_t h = u >= kF16Overflow ? big : (u < (113u << 23) ? sub : norm);
  return static_cast<std::uint16_t>(h | (sign >> 16));
}
// Exact: every f16 value is a float (a signalling NaN is quieted, payload kept).
COHORT_DTYPE_HD inline float f16_to_float(std::uint16_t h) {
  constexpr std::uint32_t kExp = 0x7c00u << 13;
  std::uint32_t o = (static_cast<std::uint32_t>(h) & 0x7fffu) << 13;
  const std::uint32_t exp = o & kExp;
  o += (127u - 15u) << 23;
  // Infinity or NaN (exponent all ones) keeps an all-ones exponent; a NaN comes out quiet, as
  // F16C's. Selects, not branches, so that loops over arrays vectorise.
  const bool special = exp == kExp;
  o += special ? (128u - 16u) << 23 : 0u;
  o |= (special && (h & 0x3ffu) != 0) ? 0x00400000u : 0u;
  float f;
  std::memcpy(&f, &o, 4);
  constexpr std::uint32_t kMagicBits = 113u << 23;
  float magic;
  std::memcpy(&magic, &kMagicBits, 4);
  std::uint32_t sub = o + (1u << 23);  // zero or subnormal: renormalise through the FPU
  float fs;
  std::memcpy(&fs, &sub, 4);
  fs -= magic;
  f = exp == 0 ? fs : f;
  std::uint32_t r;
  std::memcpy(&r, &f, 4);
  r |= (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  std::memcpy(&f, &r, 4);
  return f;
}

// Element i of a host buffer of `dt` elements, read as a double or written from one (a C++ cast;
// bf16 and f16 round to nearest even). For printing, checks and tools, not for hot loops.
double load_element(const void* buf, DType dt, std::size_t i);
void store_element(void* buf, DType dt, std::size_t i, double v);

}  // namespace cohort
