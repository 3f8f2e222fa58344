// FNV-1a, the 64-bit hash behind weights digests and the same-model check (internal).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort::parallel::detail {

inline std::uint64_t fnv1a(const void* data, std::size_t n,
                           std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace cohort::parallel::detail
