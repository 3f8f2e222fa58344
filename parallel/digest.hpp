// FNV-1a, the 64-bit hash behind weights digests and the same-model check (internal): the one in
// cohort/core/hash.hpp.
#pragma once

#include "cohort/core/hash.hpp"

namespace cohort::parallel::detail {
using ::cohort::fnv1a;
}  // namespace cohort::parallel::detail
