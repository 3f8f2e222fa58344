// nontemporal_copy (copy.hpp): an AVX-512 loop of streaming stores, chosen at run time where the
// CPU has the instructions, memcpy elsewhere.
#include "detail/copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cohort::comm::detail {

#if defined(__x86_64__) && defined(__GNUC__)
namespace {
__attribute__((target("avx512f"))) void nontemporal_copy_avx512(char* d, const char* s,
                                                                std::size_t n) {
  // Align the destination to a cache line; stream whole lines; copy the tail normally.
  const std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63)) & 63;
  if (head >= n) {
    std::memcpy(d, s, n);
    return;
  }
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  std::size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    const __m512i a = _mm512_loadu_si512(s + i);
    const __m512i b = _mm512_loadu_si512(s + i + 64);
    const __m512i c = _mm512_loadu_si512(s + i + 128);
    const __m512i e = _mm512_loadu_si512(s + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 192), e);
  }
  _mm_sfence();
  std::memcpy(d + i, s + i, n - i);
}
const bool kHaveAvx512 = __builtin_cpu_supports("avx512f");
}  // namespace

void nontemporal_copy(void* dst, const void* src, std::size_t bytes) {
  if (kHaveAvx512 && bytes >= 4096)
    nontemporal_copy_avx512(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  else
    std::memcpy(dst, src, bytes);
}
#else
void nontemporal_copy(void* dst, const void* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}
#endif

}  // namespace cohort::comm::detail
