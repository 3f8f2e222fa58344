// The activation family's vendor call on the CUDA device: the linear bias gradient
// (bias_grad over [N, F]) as cuBLAS's sgemv dbias += dy^T ones, and the cached ones vector it
// multiplies by. op_table.cu routes bias_grad here; other layouts and the activations themselves
// run the shared family (backends/common/ops/activation.hpp). The arguments come from
// seams/cublas_gemm.hpp, checked on the CPU by tests/vendor.
#include <cublas_v2.h>

#include "cohort/core/error.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cuda/seams/cublas_gemm.hpp"

namespace cohort::cuda {
void CudaDevice::gemv(const seams::CublasGemv& v) {
  // No math mode applies: sgemv has no tensor-op variant.
  const cublasStatus_t st =
      cublasSgemv_64(as_blas(blas()), as_op(v.trans), v.m, v.n, &v.alpha, v.A, v.lda, v.x,
                     v.incx, &v.beta, v.y, v.incy);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasSgemv_64", "cuda",
        ::cohort::detail::concat("sgemv on ", name(), " failed (", detail::describe(st),
                                 ") for m=", v.m, " n=", v.n, " lda=", v.lda));
}

float* CudaDevice::ones_block(std::int64_t n, std::int64_t* to_fill) {
  *to_fill = 0;
  if (n <= ones_count_) return ones_;
  // Grown geometrically, so a slowly rising batch size reallocates O(log) times. The old block
  // goes back to the cache in stream order: gemvs already enqueued still read it first.
  std::int64_t count = ones_count_ * 2 > n ? ones_count_ * 2 : n;
  if (count < 1024) count = 1024;
  float* p = static_cast<float*>(allocate(static_cast<std::size_t>(count) * sizeof(float)));
  if (ones_) deallocate(ones_, static_cast<std::size_t>(ones_count_) * sizeof(float));
  ones_ = p;
  ones_count_ = count;
  *to_fill = count;
  return ones_;
}

}  // namespace cohort::cuda
