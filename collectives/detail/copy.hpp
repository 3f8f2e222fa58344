// Copies for the data path of the backends.
#pragma once

#include <cstddef>

namespace cohort::comm::detail {

// memcpy with non-temporal stores: for destinations that will not be read again soon (the output
// of a large collective), so the copy neither reads the destination lines first (no read for
// ownership) nor evicts the working set from the caches. Falls back to memcpy where the CPU lacks
// the instructions. Same contract as memcpy (no overlap).
void nontemporal_copy(void* dst, const void* src, std::size_t bytes);

}  // namespace cohort::comm::detail
