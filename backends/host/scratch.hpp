// A grow-only, 64-byte aligned buffer: the per-thread scratch the host's paths keep across calls
// (oneDNN's convolutions and bf16 GEMMs, the shared kernels' workspace). Ops on the host run on the
// calling thread, so one thread_local buffer per role is never shared. Internal header.
#pragma once

#include <cstddef>
#include <cstdlib>

#include "cohort/core/error.hpp"

namespace cohort::host {

struct ScratchBuffer {
  void* p = nullptr;
  std::size_t n = 0;  // bytes held
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(p); }
  // At least `bytes`, reallocated (contents lost) when it holds fewer; `what` names the use in the
  // out-of-memory error.
  void* get(std::size_t bytes, const char* what) {
    if (bytes > n) {
      release();
      const std::size_t rounded = (bytes + 63) / 64 * 64;
      p = std::aligned_alloc(64, rounded);
      COHORT_CHECK_IN("host", p != nullptr, "out of host memory allocating ", rounded,
                      " bytes of scratch for ", what);
      n = rounded;
    }
    return p;
  }
  void release() {
    std::free(p);
    p = nullptr;
    n = 0;
  }
};

}  // namespace cohort::host
