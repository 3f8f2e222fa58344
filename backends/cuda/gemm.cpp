// The GEMM family on the CUDA device: cuBLAS's sgemm (the executor's gemm(), which the shared
// convolution family also calls) and strided-batched sgemm, on the compute stream. Every argument
// comes from the plain-value seam (seams/cublas_gemm.hpp, checked on the CPU by tests/vendor);
// this file only converts the transpose codes and issues the call. op_table.cu routes gemm_batched
// here; gemm reaches it through the GEMM family template (backends/common/ops/gemm.hpp).
#include <cublas_v2.h>

#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cuda/seams/cublas_gemm.hpp"

namespace cohort::cuda {

static_assert(CUBLAS_OP_N == seams::kCublasOpN && CUBLAS_OP_T == seams::kCublasOpT,
              "cuda/seams/cublas_gemm.hpp numbers cublasOperation_t as cublas_api.h does");

void CudaDevice::set_math_mode(void* handle) {
  // Full FP32 products unless the user allowed TF32 (cohort/core/math_mode.hpp); read per call so a
  // change of the mode applies to the next GEMM, but set on the handle only when it changes: the
  // handle is shared by everything this device runs (see the threads contract in the header).
  const int want = allow_tf32() ? 1 : 0;
  if (math_mode_ == want) return;
  COHORT_CHECK_CUBLAS(cublasSetMathMode(static_cast<cublasHandle_t>(handle),
                                        want ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  math_mode_ = want;
}

void CudaDevice::gemm(const GemmArgs& g) {
  // The _64 entry points take 64-bit extents, so no size needs narrowing to int.
  const seams::CublasGemm v = seams::cublas_gemm(g);
  void* h = blas();
  set_math_mode(h);
  const cublasStatus_t st =
      cublasSgemm_64(as_blas(h), as_op(v.transa), as_op(v.transb), v.m, v.n, v.k, &v.alpha, v.A,
                     v.lda, v.B, v.ldb, &v.beta, v.C, v.ldc);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasSgemm_64", "cuda",
        ::cohort::detail::concat("sgemm on ", name(), " failed (", detail::describe(st),
                                 ") for m=", g.m, " n=", g.n, " k=", g.k, " lda=", g.lda,
                                 " ldb=", g.ldb, " ldc=", g.ldc, g.trans_a ? " trans_a" : "",
                                 g.trans_b ? " trans_b" : ""));
}

void CudaDevice::gemm_batched(const calls::GemmBatched& g) {
  const seams::CublasGemm v = seams::cublas_gemm_batched(g);
  void* h = blas();
  set_math_mode(h);
  const cublasStatus_t st = cublasSgemmStridedBatched_64(
      as_blas(h), as_op(v.transa), as_op(v.transb), v.m, v.n, v.k, &v.alpha, v.A, v.lda,
      v.stride_a, v.B, v.ldb, v.stride_b, &v.beta, v.C, v.ldc, v.stride_c, v.batch);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasSgemmStridedBatched_64", "cuda",
        ::cohort::detail::concat("batched sgemm on ", name(), " failed (", detail::describe(st),
                                 ") for batch=", g.batch, " m=", g.m, " n=", g.n, " k=", g.k));
}

void CudaDevice::gemm_lowp(const seams::CublasGemm& v, const void* A16, const void* B16, DType t) {
  const cudaDataType in = t == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cublasStatus_t st = cublasGemmStridedBatchedEx_64(
      as_blas(blas()), as_op(v.transa), as_op(v.transb), v.m, v.n, v.k, &v.alpha, A16, in, v.lda,
      v.stride_a, B16, in, v.ldb, v.stride_b, &v.beta, v.C, CUDA_R_32F, v.ldc, v.stride_c, v.batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasGemmStridedBatchedEx_64", "cuda",
        ::cohort::detail::concat(dtype_name(t), " GEMM on ", name(), " failed (",
                                 detail::describe(st), ") for batch=", v.batch, " m=", v.m,
                                 " n=", v.n, " k=", v.k));
}

}  // namespace cohort::cuda
