// The conformance suite's data: deterministic inputs per (dtype, rank, element, seed), the
// references they reduce to, and the sizes every op is tried with. Shared by the host-memory
// cases (conformance.cpp) and the device-memory ones (conformance_device.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/dtype.hpp"

namespace conformance::values {

using cohort::DType;
using cohort::comm::ReduceOp;
using cohort::bf16_to_float;
using cohort::float_to_bf16;
using cohort::f16_to_float;
using cohort::float_to_f16;
using cohort::dtype_name;
using cohort::dtype_size;

constexpr DType kTypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16,
                            DType::i32, DType::i64, DType::u8};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max};
constexpr std::size_t kBig = (64u << 20) / 4;  // 64 MiB of f32

inline bool is_float(DType dt) {
  return dt == DType::f32 || dt == DType::f64 || dt == DType::bf16 || dt == DType::f16;
}

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element i of rank r's input for test `seed`, as the dtype stores it (floats in [-1, 1), i32 in
// +-1e6, i64 in +-2^40, u8 anything: sums of u8 wrap).
inline double gen(DType dt, int r, std::size_t i, std::uint64_t seed) {
  const std::uint64_t h = mix(seed * 1000003u ^ mix(static_cast<std::uint64_t>(r) << 40 ^ i));
  switch (dt) {
    case DType::f32: return static_cast<float>(static_cast<double>(h >> 11) * 0x1p-52 - 1.0);
    case DType::f64: return static_cast<double>(h >> 11) * 0x1p-52 - 1.0;
    case DType::bf16:
      return bf16_to_float(float_to_bf16(static_cast<float>(static_cast<double>(h >> 11) * 0x1p-52 - 1.0)));
    case DType::f16:
      return f16_to_float(float_to_f16(static_cast<float>(static_cast<double>(h >> 11) * 0x1p-52 - 1.0)));
    case DType::i32: return static_cast<double>(static_cast<std::int64_t>(h % 2000001) - 1000000);
    case DType::i64:
      return static_cast<double>(static_cast<std::int64_t>(h % (1ull << 41)) - (1ll << 40));
    case DType::u8: return static_cast<double>(h & 255);
  }
  return 0;
}

inline void put(void* buf, DType dt, std::size_t i, double v) { store_element(buf, dt, i, v); }
inline double get(const void* buf, DType dt, std::size_t i) { return load_element(buf, dt, i); }

inline std::vector<std::uint8_t> buffer(DType dt, std::size_t n) {
  return std::vector<std::uint8_t>(n * dtype_size(dt) + 1);  // +1: never a null data() for n = 0
}

inline void fill(void* buf, DType dt, int r, std::size_t n, std::uint64_t seed, std::size_t first = 0) {
  for (std::size_t i = 0; i < n; ++i) put(buf, dt, i, gen(dt, r, first + i, seed));
}

inline std::int64_t wrap(DType dt, std::int64_t v) {
  switch (dt) {
    case DType::i32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case DType::u8: return static_cast<std::uint8_t>(v);
    default: return v;
  }
}

// Is `got` the reduction over ranks of element i of the inputs (as gen() makes them)?
inline bool reduction_ok(DType dt, ReduceOp op, int n, std::size_t i, std::uint64_t seed, double got) {
  if (is_float(dt)) {
    double acc = gen(dt, 0, i, seed), mag = std::fabs(acc);
    for (int r = 1; r < n; ++r) {
      const double v = gen(dt, r, i, seed);
      mag += std::fabs(v);
      acc = op == ReduceOp::min ? std::min(acc, v) : op == ReduceOp::max ? std::max(acc, v) : acc + v;
    }
    if (op == ReduceOp::min || op == ReduceOp::max) return got == acc;
    if (op == ReduceOp::avg) acc /= n, mag /= n;
    // Rounding: one per addition in the working precision (float for bf16 and f16), plus their
    // final rounding(s): a backend may round after each step (e.g. a ring), hence n of them.
    const double eps = dt == DType::f64 ? 0x1p-52 : 0x1p-23;
    double tol = (n + 1) * eps * mag;
    if (dt == DType::bf16) tol += (n + 1) * 0x1p-8 * mag;
    if (dt == DType::f16) tol += (n + 1) * 0x1p-11 * mag;
    return std::fabs(got - acc) <= tol;
  }
  std::int64_t acc = static_cast<std::int64_t>(gen(dt, 0, i, seed));
  for (int r = 1; r < n; ++r) {
    const auto v = static_cast<std::int64_t>(gen(dt, r, i, seed));
    acc = op == ReduceOp::min   ? std::min(acc, v)
          : op == ReduceOp::max ? std::max(acc, v)
                                : wrap(dt, static_cast<std::int64_t>(static_cast<std::uint64_t>(acc) +
                                                                     static_cast<std::uint64_t>(v)));
  }
  if (op == ReduceOp::avg) acc /= n;
  return static_cast<std::int64_t>(got) == acc;
}

// FNV-1a of a buffer, to compare results across ranks bit for bit.
inline std::uint64_t digest(const void* p, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const std::uint8_t*>(p)[i]) * 1099511628211ull;
  return h;
}

// The element counts every op is tried with: empty, one, odd ones around the small-message
// threshold of the backends (16 KiB), and an odd multi-step one.
inline std::vector<std::size_t> sizes(DType dt) {
  const std::size_t around = (16u << 10) / dtype_size(dt);
  return {0, 1, 7, around - 1, around + 3, 300007};
}

inline std::string what(DType dt, std::size_t n, const char* extra = "") {
  return std::string(dtype_name(dt)) + " x " + std::to_string(n) + extra;
}


}  // namespace conformance::values
