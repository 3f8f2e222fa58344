// FNV-1a, 64 bits: the one hash behind weights digests, checkpoint pairing, the same-model check
// and the ucx backend's shape bits. Not cryptographic; it detects accidents, not attackers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort {

inline constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace cohort
