// The check macro for NCCL status codes, used only inside collectives/nccl/ (the backend's edge):
// a failing call becomes a cohort::Error attributed to "nccl" that names the expression, NCCL's
// name for the status and its last error message ("ncclInvalidUsage: ...: Duplicate GPU
// detected ..."). CUDA runtime calls use COHORT_CHECK_CUDA_RT below (attributed to "nccl" too,
// since they fail on this backend's behalf). Internal header: it includes nccl.h.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "cohort/core/error.hpp"
#include "cohort_internal/cuda_status.hpp"

namespace cohort::comm::nccl::detail {

inline std::string describe(ncclResult_t r, ncclComm_t comm = nullptr) {
  std::string s = ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') s += std::string(" (") + last + ")";
  return s;
}

}  // namespace cohort::comm::nccl::detail

// Throws cohort::Error when `expr` (an ncclResult_t) is neither ncclSuccess nor, on a
// non-blocking communicator, ncclInProgress (the caller then polls ncclCommGetAsyncError).
#define COHORT_CHECK_NCCL(expr)                                                             \
  do {                                                                                      \
    const ncclResult_t cohort_nccl_r_ = (expr);                                             \
    if (cohort_nccl_r_ != ncclSuccess && cohort_nccl_r_ != ncclInProgress)                  \
      ::cohort::detail::throw_error(__FILE__, __LINE__, #expr, "nccl",                      \
                                    ::cohort::comm::nccl::detail::describe(cohort_nccl_r_)); \
  } while (0)

// Throws cohort::Error attributed to "nccl" when `expr` (a cudaError_t) is not cudaSuccess (the
// shared check of cohort_internal/cuda_status.hpp).
#define COHORT_CHECK_CUDA_RT(expr) COHORT_CHECK_CUDA_IN("nccl", expr)
