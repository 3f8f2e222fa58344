// The launchers of this backend's own kernels (cuda_kernels.cu), declared with plain pointers and
// sizes so that cuda_device.cpp stays ordinary C++ built by the host compiler. Internal header.
//
// Every launcher enqueues its kernel on `stream` (a cudaStream_t passed as void*) of the device
// that is current on the calling thread, returns without waiting, and throws cohort::Error when
// the launch fails. Pointers are device memory; n == 0 (or rows == 0) enqueues nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort::cuda::launch {

// Sets n elements of `elem_bytes` (1, 2, 4 or 8) bytes each to the low `elem_bytes` bytes of
// `bits` (the element's object representation, as the host computed it).
void fill(void* x, std::size_t n, std::size_t elem_bytes, std::uint64_t bits, void* stream);

void add(const float* a, const float* b, float* out, std::size_t n, void* stream);
void sub(const float* a, const float* b, float* out, std::size_t n, void* stream);
void mul(const float* a, const float* b, float* out, std::size_t n, void* stream);
void axpy(float alpha, const float* x, float* y, std::size_t n, void* stream);
void scale(float alpha, const float* x, float* out, std::size_t n, void* stream);

// Row reductions of a row-major [rows x cols] matrix, cols >= 1; same results as the host backend
// (sum accumulated in double; max and argmax let NaN win; argmax picks the first maximal index).
void reduce_sum(const float* x, std::size_t rows, std::size_t cols, float* out, void* stream);
void reduce_max(const float* x, std::size_t rows, std::size_t cols, float* out, void* stream);
void argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out, void* stream);

// C[i * ldc + j] = beta * C[i * ldc + j] for a rows x cols block; beta == 0 writes zeros (NaN in C
// does not survive). GEMM with k == 0 reduces to this.
void scale_matrix(float* c, std::int64_t rows, std::int64_t cols, std::int64_t ldc, float beta,
                  void* stream);

// x[i] = the Philox value at stream position offset + i (kernels::UniformAt / NormalAt).
void fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float lo,
                  float hi, void* stream);
void fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float mean,
                 float stddev, void* stream);

}  // namespace cohort::cuda::launch
