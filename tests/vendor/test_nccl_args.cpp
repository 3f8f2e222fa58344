// The NCCL seam (collectives/nccl/seam.hpp) checked on the CPU: each DType and ReduceOp against the
// number nccl.h gives it (written out here as nccl.h documents them, and compared with nccl.h's
// own enumerators where the build found the header), the element sizes NCCL counts in, and NCCL's
// reductions emulated over n simulated ranks on the seam's values against cohort's reductions as
// the shm and self backends compute them (collectives/detail/reduce.hpp).
//
// The emulation follows NCCL's definitions (enqueue.cc, hostToDevRedOp; nccl.h): ncclSum adds,
// ncclMin / ncclMax compare, and ncclAvg is, for floating-point types, ncclDevPreMulSum with the
// scalar 1/nRanks rounded to the element type (each rank's value is multiplied by it, then the
// products are summed) and, for integer types, ncclDevSumPostDiv (the wrapping sum, then divided
// by nRanks with C's truncating division).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cohort/core/dtype.hpp"
#include "common/testing.hpp"
#include "detail/reduce.hpp"
#include "nccl/seam.hpp"

#if COHORT_TEST_NCCL_H
#include <nccl.h>
#endif

namespace {

using cohort::DType;
using cohort::comm::ReduceOp;
namespace seam = cohort::comm::nccl::seam;

// nccl.h (NCCL 2.10 and later; unchanged through 2.28): ncclDataType_t numbers and the size of
// one element of each.
struct TypeRow {
  DType dtype;
  int nccl;          // as documented
  std::size_t size;  // bytes
  int header;        // nccl.h's enumerator where the header was found, else the documented number
  const char* name;
};
#if COHORT_TEST_NCCL_H
#define COHORT_NCCL_ENUM(e, documented) int(e)
#else
#define COHORT_NCCL_ENUM(e, documented) documented
#endif
const TypeRow kTypes[] = {
    {DType::f32, 7, 4, COHORT_NCCL_ENUM(ncclFloat32, 7), "ncclFloat32"},
    {DType::f64, 8, 8, COHORT_NCCL_ENUM(ncclFloat64, 8), "ncclFloat64"},
    {DType::bf16, 9, 2, COHORT_NCCL_ENUM(ncclBfloat16, 9), "ncclBfloat16"},
    {DType::f16, 6, 2, COHORT_NCCL_ENUM(ncclFloat16, 6), "ncclFloat16"},
    {DType::i32, 2, 4, COHORT_NCCL_ENUM(ncclInt32, 2), "ncclInt32"},
    {DType::i64, 4, 8, COHORT_NCCL_ENUM(ncclInt64, 4), "ncclInt64"},
    {DType::u8, 1, 1, COHORT_NCCL_ENUM(ncclUint8, 1), "ncclUint8"},
};
struct OpRow {
  ReduceOp op;
  int nccl;
  int header;
  const char* name;
};
const OpRow kOps[] = {
    {ReduceOp::sum, 0, COHORT_NCCL_ENUM(ncclSum, 0), "ncclSum"},
    {ReduceOp::avg, 4, COHORT_NCCL_ENUM(ncclAvg, 4), "ncclAvg"},
    {ReduceOp::min, 3, COHORT_NCCL_ENUM(ncclMin, 3), "ncclMin"},
    {ReduceOp::max, 2, COHORT_NCCL_ENUM(ncclMax, 2), "ncclMax"},
};
#undef COHORT_NCCL_ENUM

// The number of DType enumerators (cohort/core/dtype.hpp); a new one must get a row above.
constexpr int kDTypeCount = 7;

// ---- NCCL's reductions on n simulated ranks, driven by the seam's numbers ----

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<T>;

// The result NCCL computes from the seam's (op, type) numbers: ranks combined in rank order
// (NCCL's order depends on the algorithm; the emulation fixes one). As in NCCL, the type number
// decides what ncclAvg means: ncclFloat16, ncclFloat32, ncclFloat64 and ncclBfloat16 (6 to 9)
// pre-multiply, the integer types (0 to 5) divide the sum.
template <class T>
std::vector<T> nccl_reduce(int op, int type, const std::vector<std::vector<T>>& ranks) {
  const bool pre_mul = type >= 6 && type <= 9;
  const bool post_div = type >= 0 && type <= 5;
  REQUIRE((is_float_v<T> ? pre_mul : post_div));  // the element type NCCL would read
  const int n = static_cast<int>(ranks.size());
  std::vector<T> out(ranks[0].size());
  // Integer sums wrap (two's complement) as on the GPU; computed unsigned to stay defined here.
  using U = std::make_unsigned_t<std::conditional_t<is_float_v<T>, int, T>>;
  for (std::size_t i = 0; i < out.size(); ++i) {
    T acc{};
    if (op == 0 || op == 4) {  // ncclSum, ncclAvg
      if constexpr (is_float_v<T>) {
        const T scalar = op == 4 ? static_cast<T>(1.0 / n) : T(1);  // ncclDevPreMulSum's scalar
        acc = ranks[0][i] * scalar;
        for (int r = 1; r < n; ++r) acc = acc + ranks[r][i] * scalar;
      } else {
        U u = static_cast<U>(ranks[0][i]);
        for (int r = 1; r < n; ++r) u = static_cast<U>(u + static_cast<U>(ranks[r][i]));
        acc = static_cast<T>(u);
        if (op == 4) acc = static_cast<T>(acc / static_cast<T>(n));  // ncclDevSumPostDiv
      }
    } else if (op == 2 || op == 3) {  // ncclMax, ncclMin
      acc = ranks[0][i];
      for (int r = 1; r < n; ++r) {
        const T v = ranks[r][i];
        if (op == 2 ? v > acc : v < acc) acc = v;
      }
    } else {
      FAIL("no emulation of ncclRedOp_t ", op);
    }
    out[i] = acc;
  }
  return out;
}

// cohort's reduction of the same ranks, as the host backends compute it.
template <class T>
std::vector<T> cohort_reduce(ReduceOp op, DType dtype, const std::vector<std::vector<T>>& ranks) {
  const int n = static_cast<int>(ranks.size());
  std::vector<const void*> srcs;
  for (const auto& r : ranks) srcs.push_back(r.data());
  std::vector<T> out(ranks[0].size());
  cohort::comm::detail::reduce_sources(out.data(), nullptr, srcs.data(), n, out.size(), dtype, op,
                                       n);
  return out;
}

template <class T>
std::vector<std::vector<T>> random_ranks(int n, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<T>> ranks(static_cast<std::size_t>(n), std::vector<T>(count));
  for (auto& r : ranks)
    for (std::size_t i = 0; i < count; ++i) {
      if constexpr (is_float_v<T>) {
        // Magnitudes from 1e-3 to 1e3, both signs.
        std::uniform_real_distribution<double> mant(-1.0, 1.0);
        std::uniform_int_distribution<int> ex(-3, 3);
        r[i] = static_cast<T>(mant(rng) * std::pow(10.0, ex(rng)));
      } else {
        // The whole range: sums wrap, averages of negative sums truncate toward zero.
        r[i] = static_cast<T>(rng());
      }
    }
  return ranks;
}

bool power_of_two(int n) { return (n & (n - 1)) == 0; }

template <class T>
void check_reductions(DType dtype, std::uint64_t seed) {
  const seam::NcclType t = seam::nccl_type(dtype);
  for (int n = 1; n <= 8; ++n) {
    const auto ranks = random_ranks<T>(n, 2000, seed + static_cast<std::uint64_t>(n));
    for (const OpRow& row : kOps) {
      INFO(cohort::dtype_name(dtype), " ", row.name, " over ", n, " ranks");
      const std::vector<T> nccl = nccl_reduce<T>(seam::nccl_op(row.op), t.type, ranks);
      const std::vector<T> ours = cohort_reduce<T>(row.op, dtype, ranks);
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < ours.size(); ++i) {
        bool same = nccl[i] == ours[i];
        if constexpr (is_float_v<T>) {
          // ncclAvg on floats rounds each scaled value; cohort divides the sum once. Equal when
          // 1/n is exact (a power of two), else within a few roundings of the scaled sum.
          if (!same && row.op == ReduceOp::avg && !power_of_two(n)) {
            double mag = 0;
            for (int r = 0; r < n; ++r) mag += std::fabs(double(ranks[r][i])) / n;
            const double eps = std::numeric_limits<T>::epsilon();
            same = std::fabs(double(nccl[i]) - double(ours[i])) <= 2.0 * n * eps * mag;
          }
        }
        if (!same && bad++ == 0) first = i;
      }
      INFO("first difference at ", first, ": NCCL ", nccl[first], ", cohort ", ours[first]);
      CHECK(bad == 0);
    }
  }
}

}  // namespace

TEST_SUITE("nccl") {

TEST_CASE("every DType maps to nccl.h's ncclDataType_t and element size") {
  CHECK(sizeof(kTypes) / sizeof(kTypes[0]) == kDTypeCount);
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto dt = static_cast<DType>(i);
    INFO("dtype ", cohort::dtype_name(dt));
    const TypeRow* row = nullptr;
    for (const TypeRow& r : kTypes)
      if (r.dtype == dt) row = &r;
    REQUIRE(row != nullptr);
    const seam::NcclType t = seam::nccl_type(dt);
    INFO("expected ", row->name);
    CHECK(t.type == row->nccl);
    CHECK(t.type == row->header);
    CHECK(t.size == row->size);
    // The nccl backend sizes its buffers with cohort's dtype_size; NCCL moves count * size.
    CHECK(t.size == cohort::dtype_size(dt));
  }
}

TEST_CASE("every ReduceOp maps to nccl.h's ncclRedOp_t") {
  for (const OpRow& row : kOps) {
    INFO(row.name);
    CHECK(seam::nccl_op(row.op) == row.nccl);
    CHECK(seam::nccl_op(row.op) == row.header);
  }
}

TEST_CASE("NCCL's reductions on the seam's values reproduce cohort's, avg included") {
  check_reductions<float>(DType::f32, 1);
  check_reductions<double>(DType::f64, 100);
  check_reductions<std::int32_t>(DType::i32, 200);  // avg: wrapped sum, truncated division
  check_reductions<std::int64_t>(DType::i64, 300);
  check_reductions<std::uint8_t>(DType::u8, 400);
}

TEST_CASE("ncclAvg on i32: truncation toward zero, worked values") {
  // -7 / 2 is -3 (not -4), 7 / 2 is 3; and a sum that wraps past INT32_MAX.
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::vector<std::int32_t>> ranks = {{-3, 3, big}, {-4, 4, 1}};
  const int avg = seam::nccl_op(ReduceOp::avg);
  const auto got = nccl_reduce<std::int32_t>(avg, seam::nccl_type(DType::i32).type, ranks);
  CHECK(got[0] == -3);
  CHECK(got[1] == 3);
  CHECK(got[2] == std::numeric_limits<std::int32_t>::min() / 2);  // wrapped to INT32_MIN, halved
  CHECK(got == cohort_reduce<std::int32_t>(ReduceOp::avg, DType::i32, ranks));
}

TEST_CASE("unknown DType and ReduceOp values are refused naming them") {
  using cohort::testing::error_of;
  const std::string dt = error_of([] { seam::nccl_type(static_cast<DType>(200)); });
  CHECK(dt.find("dtype 200 has no NCCL counterpart") != std::string::npos);
  const std::string op = error_of([] { seam::nccl_op(static_cast<ReduceOp>(7)); });
  CHECK(op.find("reduction 7 is not sum, avg, min or max") != std::string::npos);
}

}  // TEST_SUITE
