// The CUDA device's cuBLAS calls (GEMM family) as plain values: what cuda_device.cpp passes to
// cublasSgemm_64, cublasSgemmStridedBatched_64 and cublasSgemv_64, argument for argument, computed
// here from cohort's row-major call structs. No CUDA header is included, so the CPU test suite
// (tests/vendor) builds these values without a GPU and executes them with a column-major CPU
// BLAS, which has cuBLAS's documented meaning for every argument. The only logic between these
// values and the vendor call is the int -> cublasOperation_t conversion, whose numbering
// cuda_device.cpp checks with static_asserts.
#pragma once

#include <cstdint>

#include "cohort/backend/op_calls.hpp"

namespace cohort::cuda::seams {

// cublasOperation_t as cublas_api.h numbers it.
inline constexpr int kCublasOpN = 0;
inline constexpr int kCublasOpT = 1;

// cublasSgemmStridedBatched_64's arguments, in its order and in its column-major terms:
//   for i in [0, batch): C_i = alpha op(A_i) op(B_i) + beta C_i, X_i = X + i * stride_x,
//   op(A_i) m x k, op(B_i) k x n, C_i m x n, each stored column-major with leading dimension ld.
// batch == 1 (strides 0) is cublasSgemm_64's call.
struct CublasGemm {
  int transa = kCublasOpN, transb = kCublasOpN;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* A = nullptr;
  std::int64_t lda = 0, stride_a = 0;
  const float* B = nullptr;
  std::int64_t ldb = 0, stride_b = 0;
  float beta = 0.0f;
  float* C = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  std::int64_t batch = 1;
};

// The row-major C = alpha op(a) op(b) + beta C of `g` as cuBLAS computes it: the column-major
// C^T = op(b)^T op(a)^T (operands and m/n swapped, each operand keeping its own transpose flag
// and leading dimension). Requires m, n, k >= 1 (k == 0 is the shared path's beta scaling, which
// cuBLAS does not promise to do without reading C), non-null pointers and leading dimensions that
// cover a row; throws cohort::Error naming the argument at fault otherwise.
CublasGemm cublas_gemm(const GemmArgs& g);
// The same with the batch and its strides (batch >= 1, strides >= 0).
CublasGemm cublas_gemm_batched(const calls::GemmBatched& g);

// cublasSgemv_64's arguments: y = alpha op(A) x + beta y, A m x n column-major with leading
// dimension lda, x and y strided by incx and incy.
struct CublasGemv {
  int trans = kCublasOpN;
  std::int64_t m = 0, n = 0;
  float alpha = 1.0f;
  const float* A = nullptr;
  std::int64_t lda = 0;
  const float* x = nullptr;
  std::int64_t incx = 1;
  float beta = 0.0f;
  float* y = nullptr;
  std::int64_t incy = 1;
};

// The linear bias gradient (BiasGrad with inner == 1): dbias[c] += sum_o dy[o, c] for dy
// row-major [outer, channels], as dbias = 1 * A ones + 1 * dbias with A the column-major
// [channels, outer] matrix that dy is (lda = channels) and `ones` at least `outer` ones in device
// memory. Requires inner == 1, outer and channels >= 1 and non-null pointers; throws cohort::Error
// naming the argument otherwise.
CublasGemv cublas_bias_grad(const calls::BiasGrad& c, const float* ones);

}  // namespace cohort::cuda::seams
