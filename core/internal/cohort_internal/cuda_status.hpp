// The one check for CUDA runtime status codes (cudaError_t), shared by every edge that calls the
// runtime: the CUDA device (backends/cuda/cuda_check.hpp, attributed to "cuda") and the NCCL
// communicator (collectives/nccl/check.hpp, attributed to "nccl", on whose behalf its runtime
// calls fail). Internal: it includes cuda_runtime_api.h, is never installed, and only targets
// that link CUDA::cudart include it (the cohort_cuda_status interface target of core/).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "cohort/core/error.hpp"

namespace cohort::detail {

inline std::string describe_cuda(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace cohort::detail

// Throws cohort::Error attributed to `backend` when `expr` (a cudaError_t) is not cudaSuccess. A
// failed runtime call also leaves its error in the thread's "last error" slot; it is read (and,
// for non-sticky errors, cleared) before throwing so that a later launch check
// (cudaGetLastError) does not report this stale failure again.
#define COHORT_CHECK_CUDA_IN(backend, expr)                                                 \
  do {                                                                                      \
    const cudaError_t cohort_cuda_err_ = (expr);                                            \
    if (cohort_cuda_err_ != cudaSuccess) {                                                  \
      (void)cudaGetLastError();                                                             \
      ::cohort::detail::throw_error(__FILE__, __LINE__, #expr, backend,                     \
                                    ::cohort::detail::describe_cuda(cohort_cuda_err_));     \
    }                                                                                       \
  } while (0)
