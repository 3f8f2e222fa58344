// Check macros for the CUDA runtime (the shared one), cuBLAS and cuDNN, used only at this backend's edge: each failing call
// becomes a cohort::Error attributed to "cuda" that names the expression, the status name and its
// description ("cudaErrorMemoryAllocation: out of memory"). Internal header: it includes CUDA
// headers, so nothing outside backends/cuda/ may include it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "cohort/core/error.hpp"
#include "cohort_internal/cuda_status.hpp"

namespace cohort::cuda {
// The backend keeps CUDA's handles as void* in headers that plain C++ includes (cuda_device.hpp,
// the seams); these name them again at the call.
inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
inline cublasHandle_t as_blas(void* h) { return static_cast<cublasHandle_t>(h); }
inline cublasOperation_t as_op(int op) { return static_cast<cublasOperation_t>(op); }
}  // namespace cohort::cuda

namespace cohort::cuda::detail {

inline std::string describe(cudaError_t e) { return ::cohort::detail::describe_cuda(e); }
inline std::string describe(cublasStatus_t s) {
  return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s);
}

// cuDNN 9 keeps a per-thread message for the last failure that says which argument it rejected;
// it is read (and so cleared) here.
inline std::string describe(cudnnStatus_t s) {
  std::string r = cudnnGetErrorString(s);
  char why[512] = {0};
  cudnnGetLastErrorString(why, sizeof why);
  if (why[0] != 0) r += std::string(": ") + why;
  return r;
}

}  // namespace cohort::cuda::detail

// Throws cohort::Error attributed to "cuda" when `expr` (a cudaError_t) is not cudaSuccess (the
// shared check of cohort_internal/cuda_status.hpp).
#define COHORT_CHECK_CUDA(expr) COHORT_CHECK_CUDA_IN("cuda", expr)

// Throws cohort::Error when `expr` (a cublasStatus_t) is not CUBLAS_STATUS_SUCCESS.
#define COHORT_CHECK_CUBLAS(expr)                                                           \
  do {                                                                                      \
    const cublasStatus_t cohort_cublas_st_ = (expr);                                        \
    if (cohort_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                         \
      ::cohort::detail::throw_error(__FILE__, __LINE__, #expr, "cuda",                      \
                                    ::cohort::cuda::detail::describe(cohort_cublas_st_));   \
  } while (0)

// Throws cohort::Error when `expr` (a cudnnStatus_t) is not CUDNN_STATUS_SUCCESS.
#define COHORT_CHECK_CUDNN(expr)                                                            \
  do {                                                                                      \
    const cudnnStatus_t cohort_cudnn_st_ = (expr);                                          \
    if (cohort_cudnn_st_ != CUDNN_STATUS_SUCCESS)                                           \
      ::cohort::detail::throw_error(__FILE__, __LINE__, #expr, "cuda",                      \
                                    ::cohort::cuda::detail::describe(cohort_cudnn_st_));    \
  } while (0)
