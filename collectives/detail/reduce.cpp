// The reduction loops. Every source is read once and the result written once per call. Two sources
// (the common case) take one fused loop per aliasing pattern (distinct, dst == a, dst == b), each
// with __restrict pointers so that it vectorises without run-time overlap checks; more sources are
// combined through a small accumulator block that lives in L1 (1024 elements), which makes exact
// aliasing between dst and any source (in-place collectives) safe as well. Each dtype's kernel is
// cloned for AVX-512 and AVX2 and picked when the library loads (GCC target_clones), so a portable
// build still runs wide vectors. f16 on a CPU with F16C converts whole blocks with those
// instructions and combines them as f32 (same operations in the same order as the portable f16
// loops, whose conversions F16C matches bit for bit, so the result is the same either way).
#include "detail/reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define COHORT_HAVE_F16C_PATH 1
#endif

#include "cohort/core/error.hpp"

namespace cohort::comm::detail {
namespace {

#define COHORT_INLINE __attribute__((always_inline)) inline
// (Not under ThreadSanitizer: an instrumented ifunc resolver runs before the TSan runtime.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define COHORT_CLONES __attribute__((target_clones("arch=skylake-avx512", "avx2", "default")))
#else
#define COHORT_CLONES
#endif

// Storage type S, accumulator type A, and how to move between them. Integers accumulate in their
// own type with wrapping addition (done in the unsigned type: signed overflow is undefined).
struct F32 {
  using S = float;
  using A = float;
  static COHORT_INLINE A load(S x) { return x; }
  static COHORT_INLINE S store(A x) { return x; }
  static COHORT_INLINE A add(A a, A b) { return a + b; }
  static COHORT_INLINE A div(A a, int n) { return a / static_cast<A>(n); }
};
struct F64 {
  using S = double;
  using A = double;
  static COHORT_INLINE A load(S x) { return x; }
  static COHORT_INLINE S store(A x) { return x; }
  static COHORT_INLINE A add(A a, A b) { return a + b; }
  static COHORT_INLINE A div(A a, int n) { return a / static_cast<A>(n); }
};
// bf16 and f16 combine in float and round back once per store (the header's inline, branch-free
// conversions, so these loops vectorise too).
struct BF16 {
  using S = std::uint16_t;
  using A = float;
  static COHORT_INLINE A load(S b) { return bf16_to_float(b); }
  static COHORT_INLINE S store(A f) { return float_to_bf16(f); }
  static COHORT_INLINE A add(A a, A b) { return a + b; }
  static COHORT_INLINE A div(A a, int n) { return a / static_cast<A>(n); }
};
struct F16 {
  using S = std::uint16_t;
  using A = float;
  static COHORT_INLINE A load(S b) { return f16_to_float(b); }
  static COHORT_INLINE S store(A f) { return float_to_f16(f); }
  static COHORT_INLINE A add(A a, A b) { return a + b; }
  static COHORT_INLINE A div(A a, int n) { return a / static_cast<A>(n); }
};
template <class T, class U>
struct Int {
  using S = T;
  using A = T;
  static COHORT_INLINE A load(S x) { return x; }
  static COHORT_INLINE S store(A x) { return x; }
  static COHORT_INLINE A add(A a, A b) {
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
  static COHORT_INLINE A div(A a, int n) { return static_cast<A>(a / static_cast<A>(n)); }
};
using I32 = Int<std::int32_t, std::uint32_t>;
using I64 = Int<std::int64_t, std::uint64_t>;
using U8 = Int<std::uint8_t, std::uint32_t>;

struct Sum {
  template <class Tr>
  static COHORT_INLINE typename Tr::A apply(typename Tr::A a, typename Tr::A b) {
    return Tr::add(a, b);
  }
};
struct Min {
  template <class Tr>
  static COHORT_INLINE typename Tr::A apply(typename Tr::A a, typename Tr::A b) {
    return b < a ? b : a;
  }
};
struct Max {
  template <class Tr>
  static COHORT_INLINE typename Tr::A apply(typename Tr::A a, typename Tr::A b) {
    return a < b ? b : a;
  }
};

constexpr std::size_t kBlock = 1024;

// The block loops take __restrict pointers (the accumulator is local, the sources and
// destinations are distinct from it), so they vectorise without run-time overlap checks.
template <class Tr>
COHORT_INLINE void load_block(typename Tr::A* __restrict acc, const typename Tr::S* __restrict s,
                              std::size_t m) {
  for (std::size_t j = 0; j < m; ++j) acc[j] = Tr::load(s[j]);
}
template <class Tr, class Op>
COHORT_INLINE void combine_block(typename Tr::A* __restrict acc,
                                 const typename Tr::S* __restrict s, std::size_t m) {
  for (std::size_t j = 0; j < m; ++j) acc[j] = Op::template apply<Tr>(acc[j], Tr::load(s[j]));
}
template <class Tr>
COHORT_INLINE void divide_block(typename Tr::A* __restrict acc, std::size_t m, int world) {
  for (std::size_t j = 0; j < m; ++j) acc[j] = Tr::div(acc[j], world);
}
template <class Tr>
COHORT_INLINE void store_block(typename Tr::S* __restrict d, const typename Tr::A* __restrict acc,
                               std::size_t m) {
  for (std::size_t j = 0; j < m; ++j) d[j] = Tr::store(acc[j]);
}

// Two sources, the common case (two ranks, or a ring step): one fused pass with no accumulator.
// dst may be exactly a or b (in place); dst2 is distinct from everything.
template <class Tr, class Op, bool Avg>
COHORT_INLINE typename Tr::S apply2(typename Tr::S x, typename Tr::S y, int world) {
  auto v = Op::template apply<Tr>(Tr::load(x), Tr::load(y));
  if (Avg) v = Tr::div(v, world);
  return Tr::store(v);
}
template <class Tr, class Op, bool Avg>
COHORT_INLINE void pair_distinct(typename Tr::S* __restrict d, const typename Tr::S* __restrict a,
                                 const typename Tr::S* __restrict b, std::size_t n, int world) {
  for (std::size_t i = 0; i < n; ++i) d[i] = apply2<Tr, Op, Avg>(a[i], b[i], world);
}
template <class Tr, class Op, bool Avg>
COHORT_INLINE void pair_distinct2(typename Tr::S* __restrict d, typename Tr::S* __restrict d2,
                                  const typename Tr::S* __restrict a,
                                  const typename Tr::S* __restrict b, std::size_t n, int world) {
  for (std::size_t i = 0; i < n; ++i) d[i] = d2[i] = apply2<Tr, Op, Avg>(a[i], b[i], world);
}
// d == a (left) or d == b (!left).
template <class Tr, class Op, bool Avg>
COHORT_INLINE void pair_inplace(typename Tr::S* __restrict d, const typename Tr::S* __restrict o,
                                typename Tr::S* __restrict d2, bool left, std::size_t n,
                                int world) {
  if (left && d2)
    for (std::size_t i = 0; i < n; ++i) d[i] = d2[i] = apply2<Tr, Op, Avg>(d[i], o[i], world);
  else if (left)
    for (std::size_t i = 0; i < n; ++i) d[i] = apply2<Tr, Op, Avg>(d[i], o[i], world);
  else if (d2)
    for (std::size_t i = 0; i < n; ++i) d[i] = d2[i] = apply2<Tr, Op, Avg>(o[i], d[i], world);
  else
    for (std::size_t i = 0; i < n; ++i) d[i] = apply2<Tr, Op, Avg>(o[i], d[i], world);
}
template <class Tr, class Op, bool Avg>
COHORT_INLINE void pair(typename Tr::S* d, typename Tr::S* d2, const typename Tr::S* a,
                        const typename Tr::S* b, std::size_t n, int world) {
  if (d == a && d != b)
    pair_inplace<Tr, Op, Avg>(d, b, d2, true, n, world);
  else if (d == b && d != a)
    pair_inplace<Tr, Op, Avg>(d, a, d2, false, n, world);
  else if (d != a && d != b && d2)
    pair_distinct2<Tr, Op, Avg>(d, d2, a, b, n, world);
  else if (d != a && d != b)
    pair_distinct<Tr, Op, Avg>(d, a, b, n, world);
  else  // a == b == d: degenerate, element by element
    for (std::size_t i = 0; i < n; ++i) {
      const auto v = apply2<Tr, Op, Avg>(a[i], b[i], world);
      d[i] = v;
      if (d2) d2[i] = v;
    }
}

template <class Tr, class Op>
COHORT_INLINE void combine(typename Tr::S* dst, typename Tr::S* dst2,
                           const typename Tr::S* const* srcs, int nsrc, std::size_t count,
                           bool avg, int world) {
  if (nsrc == 2) {
    if (avg)
      pair<Tr, Op, true>(dst, dst2, srcs[0], srcs[1], count, world);
    else
      pair<Tr, Op, false>(dst, dst2, srcs[0], srcs[1], count, world);
    return;
  }
  alignas(64) typename Tr::A acc[kBlock];
  for (std::size_t i0 = 0; i0 < count; i0 += kBlock) {
    const std::size_t m = std::min(kBlock, count - i0);
    load_block<Tr>(acc, srcs[0] + i0, m);
    for (int k = 1; k < nsrc; ++k) combine_block<Tr, Op>(acc, srcs[k] + i0, m);
    if (avg) divide_block<Tr>(acc, m, world);
    store_block<Tr>(dst + i0, acc, m);
    if (dst2) store_block<Tr>(dst2 + i0, acc, m);
  }
}

template <class Tr>
COHORT_INLINE void dispatch_op(void* dst, void* dst2, const void* const* srcs, int nsrc,
                               std::size_t count, ReduceOp op, int world) {
  using S = typename Tr::S;
  auto* d = static_cast<S*>(dst);
  auto* d2 = static_cast<S*>(dst2);
  auto* s = reinterpret_cast<const S* const*>(srcs);
  switch (op) {
    case ReduceOp::sum: combine<Tr, Sum>(d, d2, s, nsrc, count, false, world); return;
    case ReduceOp::avg: combine<Tr, Sum>(d, d2, s, nsrc, count, true, world); return;
    case ReduceOp::min: combine<Tr, Min>(d, d2, s, nsrc, count, false, world); return;
    case ReduceOp::max: combine<Tr, Max>(d, d2, s, nsrc, count, false, world); return;
  }
}

template <class Tr>
COHORT_INLINE void divide(void* buf, std::size_t count, int world) {
  auto* p = static_cast<typename Tr::S*>(buf);
  for (std::size_t i = 0; i < count; ++i) p[i] = Tr::store(Tr::div(Tr::load(p[i]), world));
}

#define COHORT_KERNELS(NAME, TR)                                                              \
  COHORT_CLONES void reduce_##NAME(void* dst, void* dst2, const void* const* srcs, int nsrc, \
                                   std::size_t count, ReduceOp op, int world) {              \
    dispatch_op<TR>(dst, dst2, srcs, nsrc, count, op, world);                                \
  }                                                                                           \
  COHORT_CLONES void avg_##NAME(void* buf, std::size_t count, int world) {                   \
    divide<TR>(buf, count, world);                                                            \
  }
COHORT_KERNELS(f32, F32)
COHORT_KERNELS(f64, F64)
COHORT_KERNELS(bf16, BF16)
COHORT_KERNELS(f16, F16)
COHORT_KERNELS(i32, I32)
COHORT_KERNELS(i64, I64)
COHORT_KERNELS(u8, U8)
#undef COHORT_KERNELS

#ifdef COHORT_HAVE_F16C_PATH
// Blocks of f16 widened to f32 and back with F16C (8 per instruction); the tails use the portable
// conversions, which give the same bits.
__attribute__((target("avx2,f16c"))) void widen_f16(float* __restrict d,
                                                    const std::uint16_t* __restrict s,
                                                    std::size_t m) {
  std::size_t j = 0;
  for (; j + 8 <= m; j += 8)
    _mm256_store_ps(d + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j))));
  for (; j < m; ++j) d[j] = f16_to_float(s[j]);
}
__attribute__((target("avx2,f16c"))) void narrow_f16(std::uint16_t* __restrict d,
                                                     const float* __restrict s, std::size_t m) {
  std::size_t j = 0;
  for (; j + 8 <= m; j += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j),
                     _mm256_cvtps_ph(_mm256_load_ps(s + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; j < m; ++j) d[j] = float_to_f16(s[j]);
}

// The f16 reduction through f32 blocks: per element the same operations as combine<F16, Op>
// (sources left to right, the division for avg, one rounding per store). Exact aliasing between
// dst and a source is safe: a block is read whole before it is written.
template <class Op>
COHORT_INLINE void combine_f16c(std::uint16_t* dst, std::uint16_t* dst2,
                                const std::uint16_t* const* srcs, int nsrc, std::size_t count,
                                bool avg, int world) {
  alignas(64) float acc[kBlock];
  alignas(64) float in[kBlock];
  for (std::size_t i0 = 0; i0 < count; i0 += kBlock) {
    const std::size_t m = std::min(kBlock, count - i0);
    widen_f16(acc, srcs[0] + i0, m);
    for (int k = 1; k < nsrc; ++k) {
      widen_f16(in, srcs[k] + i0, m);
      for (std::size_t j = 0; j < m; ++j) acc[j] = Op::template apply<F32>(acc[j], in[j]);
    }
    if (avg) divide_block<F32>(acc, m, world);
    narrow_f16(dst + i0, acc, m);
    if (dst2) narrow_f16(dst2 + i0, acc, m);
  }
}
COHORT_CLONES void reduce_f16c(void* dst, void* dst2, const void* const* srcs, int nsrc,
                               std::size_t count, ReduceOp op, int world) {
  auto* d = static_cast<std::uint16_t*>(dst);
  auto* d2 = static_cast<std::uint16_t*>(dst2);
  auto* s = reinterpret_cast<const std::uint16_t* const*>(srcs);
  switch (op) {
    case ReduceOp::sum: return combine_f16c<Sum>(d, d2, s, nsrc, count, false, world);
    case ReduceOp::avg: return combine_f16c<Sum>(d, d2, s, nsrc, count, true, world);
    case ReduceOp::min: return combine_f16c<Min>(d, d2, s, nsrc, count, false, world);
    case ReduceOp::max: return combine_f16c<Max>(d, d2, s, nsrc, count, false, world);
  }
}
COHORT_CLONES void avg_f16c(void* buf, std::size_t count, int world) {
  auto* p = static_cast<std::uint16_t*>(buf);
  alignas(64) float acc[kBlock];
  for (std::size_t i0 = 0; i0 < count; i0 += kBlock) {
    const std::size_t m = std::min(kBlock, count - i0);
    widen_f16(acc, p + i0, m);
    divide_block<F32>(acc, m, world);
    narrow_f16(p + i0, acc, m);
  }
}

// Whether f16 takes the F16C path: the CPU has it, and COHORT_REDUCE_F16C is not "0" (the test
// suite runs the reductions both ways with it). Read once.
bool use_f16c() {
  static const bool on = [] {
    const char* e = std::getenv("COHORT_REDUCE_F16C");
    if (e && std::string(e) == "0") return false;
    // F16C is CPUID.1:ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c"); AVX2's
    // check also covers the OS saving the YMM registers.
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
    __builtin_cpu_init();
    return f16c && __builtin_cpu_supports("avx2");
  }();
  return on;
}
#endif

}  // namespace

bool reducible(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::bf16:
    case DType::f16:
    case DType::i32:
    case DType::i64:
    case DType::u8: return true;
  }
  return false;
}

std::vector<DType> reducible_dtypes() {
  return {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8};
}

void reduce_sources(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count,
                    DType dtype, ReduceOp op, int world) {
  COHORT_CHECK(nsrc >= 1, "reduce_sources: needs at least one source, got ", nsrc);
  COHORT_CHECK(op != ReduceOp::avg || world >= 1, "reduce_sources: avg over world ", world);
  if (count == 0) return;
  switch (dtype) {
    case DType::f32: return reduce_f32(dst, dst2, srcs, nsrc, count, op, world);
    case DType::f64: return reduce_f64(dst, dst2, srcs, nsrc, count, op, world);
    case DType::bf16: return reduce_bf16(dst, dst2, srcs, nsrc, count, op, world);
    case DType::f16:
#ifdef COHORT_HAVE_F16C_PATH
      if (use_f16c()) return reduce_f16c(dst, dst2, srcs, nsrc, count, op, world);
#endif
      return reduce_f16(dst, dst2, srcs, nsrc, count, op, world);
    case DType::i32: return reduce_i32(dst, dst2, srcs, nsrc, count, op, world);
    case DType::i64: return reduce_i64(dst, dst2, srcs, nsrc, count, op, world);
    case DType::u8: return reduce_u8(dst, dst2, srcs, nsrc, count, op, world);
  }
  COHORT_FAIL("reduce: unsupported dtype code ", static_cast<int>(dtype));
}

void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op) {
  const void* srcs[2] = {dst, src};
  reduce_sources(dst, nullptr, srcs, 2, count, dtype, op == ReduceOp::avg ? ReduceOp::sum : op, 1);
}

void finish_avg(void* buf, std::size_t count, DType dtype, int world) {
  COHORT_CHECK(world >= 1, "finish_avg: world size ", world);
  if (count == 0 || world == 1) return;
  switch (dtype) {
    case DType::f32: return avg_f32(buf, count, world);
    case DType::f64: return avg_f64(buf, count, world);
    case DType::bf16: return avg_bf16(buf, count, world);
    case DType::f16:
#ifdef COHORT_HAVE_F16C_PATH
      if (use_f16c()) return avg_f16c(buf, count, world);
#endif
      return avg_f16(buf, count, world);
    case DType::i32: return avg_i32(buf, count, world);
    case DType::i64: return avg_i64(buf, count, world);
    case DType::u8: return avg_u8(buf, count, world);
  }
  COHORT_FAIL("finish_avg: unsupported dtype code ", static_cast<int>(dtype));
}

}  // namespace cohort::comm::detail
