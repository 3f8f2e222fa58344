// The reduction helpers every backend shares (collectives/detail/reduce.hpp), against plain loops
// in double (floats) or in the wrapping integer type, for every dtype and op, several source
// counts, aliasing as in-place collectives use it, and sizes around the kernel's block length.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cohort/core/dtype.hpp"
#include "detail/reduce.hpp"

using namespace cohort;
using namespace cohort::comm;

namespace {

// Random values of `dt` stored as raw bytes, and a reader returning them as double.
std::vector<std::uint8_t> random_buffer(DType dt, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint8_t> b(n * dtype_size(dt));
  std::uniform_real_distribution<double> u(-100, 100);
  for (std::size_t i = 0; i < n; ++i) {
    switch (dt) {
      case DType::f32: reinterpret_cast<float*>(b.data())[i] = static_cast<float>(u(rng)); break;
      case DType::f64: reinterpret_cast<double*>(b.data())[i] = u(rng); break;
      case DType::bf16:
        reinterpret_cast<std::uint16_t*>(b.data())[i] = float_to_bf16(static_cast<float>(u(rng)));
        break;
      case DType::f16:
        reinterpret_cast<std::uint16_t*>(b.data())[i] = float_to_f16(static_cast<float>(u(rng)));
        break;
      case DType::i32:
        reinterpret_cast<std::int32_t*>(b.data())[i] = static_cast<std::int32_t>(rng());
        break;
      case DType::i64:
        reinterpret_cast<std::int64_t*>(b.data())[i] = static_cast<std::int64_t>(rng());
        break;
      case DType::u8: b[i] = static_cast<std::uint8_t>(rng()); break;
    }
  }
  return b;
}

double as_double(DType dt, const std::uint8_t* b, std::size_t i) { return load_element(b, dt, i); }

// Integer reference in the wrapping unsigned type of the dtype, returned as its signed value.
std::int64_t int_value(DType dt, const std::uint8_t* b, std::size_t i) {
  switch (dt) {
    case DType::i32: return reinterpret_cast<const std::int32_t*>(b)[i];
    case DType::i64: return reinterpret_cast<const std::int64_t*>(b)[i];
    default: return b[i];
  }
}
std::int64_t wrap(DType dt, std::uint64_t v) {
  switch (dt) {
    case DType::i32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case DType::i64: return static_cast<std::int64_t>(v);
    default: return static_cast<std::uint8_t>(v);
  }
}

bool is_float(DType dt) {
  return dt == DType::f32 || dt == DType::f64 || dt == DType::bf16 || dt == DType::f16;
}

// Checks dst against the reference over srcs (taken before the call, as copies).
void check_result(DType dt, ReduceOp op, int world, const std::vector<std::vector<std::uint8_t>>& srcs,
                  const std::uint8_t* dst, std::size_t n, bool single_rounding) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_float(dt)) {
      double acc = as_double(dt, srcs[0].data(), i), mag = std::fabs(acc);
      for (std::size_t k = 1; k < srcs.size(); ++k) {
        const double v = as_double(dt, srcs[k].data(), i);
        mag += std::fabs(v);
        if (op == ReduceOp::min) acc = std::min(acc, v);
        else if (op == ReduceOp::max) acc = std::max(acc, v);
        else acc += v;
      }
      if (op == ReduceOp::avg) acc /= world, mag /= world;
      const double got = as_double(dt, dst, i);
      double tol = 0;
      if (op == ReduceOp::sum || op == ReduceOp::avg) {
        // Unit roundoff of the storage type (f16: 2^-11 relative; its subnormal spacing 2^-24 is
        // far below these inputs' sums).
        const double eps = dt == DType::f64   ? 0x1p-52
                           : dt == DType::f32 ? 0x1p-23
                           : dt == DType::f16 ? 0x1p-11
                                              : 0x1p-8;
        const double k = double(srcs.size());
        // bf16 and f16 accumulate in float and round once (reduce_sources), or once per step plus
        // once more in finish_avg (reduce_into).
        const bool half = dt == DType::bf16 || dt == DType::f16;
        tol = half ? (single_rounding ? eps * std::fabs(acc) : k * eps * mag + eps * std::fabs(acc)) +
                         k * 0x1p-23 * mag
                   : k * eps * mag;
        tol += 1e-300;
      }
      bad += std::fabs(got - acc) > tol;
    } else {
      std::uint64_t acc = static_cast<std::uint64_t>(int_value(dt, srcs[0].data(), i));
      std::int64_t sacc = wrap(dt, acc);
      for (std::size_t k = 1; k < srcs.size(); ++k) {
        const std::int64_t v = int_value(dt, srcs[k].data(), i);
        if (op == ReduceOp::min) sacc = std::min(sacc, v);
        else if (op == ReduceOp::max) sacc = std::max(sacc, v);
        else sacc = wrap(dt, static_cast<std::uint64_t>(sacc) + static_cast<std::uint64_t>(v));
      }
      if (op == ReduceOp::avg) sacc /= world;
      bad += int_value(dt, dst, i) != sacc;
    }
  }
  CHECK(bad == 0);
}

constexpr DType kTypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16,
                            DType::i32, DType::i64, DType::u8};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max};

}  // namespace

TEST_SUITE("reduce") {
  TEST_CASE("reduce_sources: every dtype, op and source count, against plain loops") {
    std::mt19937_64 rng(42);
    for (DType dt : kTypes)
      for (ReduceOp op : kOps)
        for (int nsrc : {1, 2, 3, 5})
          for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{1025},
                                std::size_t{5000}}) {
            CAPTURE(dtype_name(dt));
            CAPTURE(reduce_op_name(op));
            CAPTURE(nsrc);
            CAPTURE(n);
            std::vector<std::vector<std::uint8_t>> srcs;
            std::vector<const void*> ptrs;
            for (int k = 0; k < nsrc; ++k) srcs.push_back(random_buffer(dt, n, rng));
            for (auto& s : srcs) ptrs.push_back(s.data());
            std::vector<std::uint8_t> dst(n * dtype_size(dt) + 1), dst2(dst.size());
            detail::reduce_sources(dst.data(), dst2.data(), ptrs.data(), nsrc, n, dt, op, nsrc);
            check_result(dt, op, nsrc, srcs, dst.data(), n, true);
            CHECK(std::memcmp(dst.data(), dst2.data(), n * dtype_size(dt)) == 0);
          }
  }

  TEST_CASE("reduce_sources: dst may be any of the sources (in place)") {
    std::mt19937_64 rng(7);
    for (DType dt : kTypes)
      for (int alias : {0, 1, 2}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(alias);
        const std::size_t n = 3000;
        std::vector<std::vector<std::uint8_t>> srcs;
        for (int k = 0; k < 3; ++k) srcs.push_back(random_buffer(dt, n, rng));
        const auto copies = srcs;
        std::vector<const void*> ptrs;
        for (auto& s : srcs) ptrs.push_back(s.data());
        detail::reduce_sources(srcs[alias].data(), nullptr, ptrs.data(), 3, n, dt, ReduceOp::sum, 3);
        check_result(dt, ReduceOp::sum, 3, copies, srcs[alias].data(), n, true);
      }
  }

  TEST_CASE("reduce_into + finish_avg") {
    std::mt19937_64 rng(9);
    for (DType dt : kTypes)
      for (ReduceOp op : kOps) {
        CAPTURE(dtype_name(dt));
        CAPTURE(reduce_op_name(op));
        const std::size_t n = 2500;
        std::vector<std::vector<std::uint8_t>> srcs;
        for (int k = 0; k < 4; ++k) srcs.push_back(random_buffer(dt, n, rng));
        std::vector<std::uint8_t> acc = srcs[0];
        for (int k = 1; k < 4; ++k) detail::reduce_into(acc.data(), srcs[k].data(), n, dt, op);
        if (op == ReduceOp::avg) detail::finish_avg(acc.data(), n, dt, 4);
        check_result(dt, op, 4, srcs, acc.data(), n, false);
      }
  }

  TEST_CASE("bf16 rounds like cohort::float_to_bf16; integers wrap") {
    const std::uint16_t a = float_to_bf16(1.0f), b = float_to_bf16(0x1p-8f);  // a tie: 1 + 2^-8
    std::uint16_t out = 0;
    const void* srcs[2] = {&a, &b};
    detail::reduce_sources(&out, nullptr, srcs, 2, 1, DType::bf16, ReduceOp::sum, 2);
    CHECK(out == float_to_bf16(1.0f + 0x1p-8f));
    const std::int32_t big[2] = {2147483647, 1};
    std::int32_t r = 0;
    const void* s2[2] = {&big[0], &big[1]};
    detail::reduce_sources(&r, nullptr, s2, 2, 1, DType::i32, ReduceOp::sum, 2);
    CHECK(r == -2147483647 - 1);
    const std::uint8_t u[2] = {200, 100};
    std::uint8_t ru = 0;
    const void* s3[2] = {&u[0], &u[1]};
    detail::reduce_sources(&ru, nullptr, s3, 2, 1, DType::u8, ReduceOp::avg, 2);
    CHECK(ru == 22);  // (300 mod 256) / 2: avg is the wrapped sum divided
    std::int64_t neg[2] = {-7, 0};
    std::int64_t rn = 0;
    const void* s4[2] = {&neg[0], &neg[1]};
    detail::reduce_sources(&rn, nullptr, s4, 2, 1, DType::i64, ReduceOp::avg, 2);
    CHECK(rn == -3);  // truncates toward zero
  }

  // The F16C path (taken on CPUs that have it) and the portable one (COHORT_REDUCE_F16C=0: the
  // collectives_reduce_portable_f16 entry) must both give exactly the scalar definition: widen,
  // combine left to right in float, divide for avg, round once. The inputs cover the whole f16
  // range (subnormals, +-65504, infinities), so sums overflow and cancel too.
  TEST_CASE("f16: bit-exact against the scalar definition, every path and aliasing") {
    std::mt19937_64 rng(16);
    const std::size_t n = 3001;  // blocks of 1024 and a tail that is not a multiple of 8
    for (int nsrc : {1, 2, 3, 5})
      for (ReduceOp op : kOps)
        for (int alias = -1; alias < std::min(nsrc, 2); ++alias) {
          CAPTURE(nsrc);
          CAPTURE(reduce_op_name(op));
          CAPTURE(alias);
          std::vector<std::vector<std::uint16_t>> src(static_cast<std::size_t>(nsrc),
                                                      std::vector<std::uint16_t>(n));
          for (auto& v : src)
            for (auto& x : v) {
              x = static_cast<std::uint16_t>(rng());
              if ((x & 0x7c00) == 0x7c00 && (x & 0x3ff) != 0) x &= 0xfc00;  // NaN -> infinity
            }
          std::vector<std::uint16_t> want(n);
          for (std::size_t i = 0; i < n; ++i) {
            float acc = f16_to_float(src[0][i]);
            for (int k = 1; k < nsrc; ++k) {
              const float v = f16_to_float(src[static_cast<std::size_t>(k)][i]);
              acc = op == ReduceOp::min ? (v < acc ? v : acc) : op == ReduceOp::max ? (acc < v ? v : acc) : acc + v;
            }
            if (op == ReduceOp::avg) acc /= static_cast<float>(nsrc);
            want[i] = float_to_f16(acc);
          }
          std::vector<std::uint16_t> out(n), out2(n);
          std::vector<const void*> ptrs;
          for (auto& v : src) ptrs.push_back(v.data());
          std::uint16_t* dst = alias >= 0 ? src[static_cast<std::size_t>(alias)].data() : out.data();
          detail::reduce_sources(dst, out2.data(), ptrs.data(), nsrc, n, DType::f16, op, nsrc);
          std::size_t bad = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const bool same_nan = std::isnan(f16_to_float(dst[i])) && std::isnan(f16_to_float(want[i]));
            bad += !(dst[i] == want[i] || same_nan) + !(out2[i] == want[i] || same_nan);
          }
          CHECK(bad == 0);
        }
    // finish_avg alone.
    std::vector<std::uint16_t> v(2050), want(2050);
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<std::uint16_t>(rng()) & 0xfbff;  // finite
      want[i] = float_to_f16(f16_to_float(v[i]) / 3.0f);
    }
    detail::finish_avg(v.data(), v.size(), DType::f16, 3);
    CHECK(v == want);
  }

  TEST_CASE("every dtype is reducible") {
    CHECK(detail::reducible_dtypes().size() == 7);
    for (DType dt : kTypes) CHECK(detail::reducible(dt));
  }
}
