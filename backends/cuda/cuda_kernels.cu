// This backend's own kernels: a handful of generic templates that apply the shared functors of
// cohort/detail/kernels.hpp (the same ones the host backend runs under Kokkos), so the arithmetic
// is written once. Everything that is not element-wise, a row reduction or a Philox fill goes to
// cuBLAS (gemm, in cuda_device.cpp).
//
// Bit-for-bit parity with the host: this file is compiled with --fmad=false (see CMakeLists.txt),
// because nvcc would otherwise contract `y + alpha * x` and `lo + (hi - lo) * u` into FMAs that the
// host compiler (plain x86-64, no -mfma) does not use, and fill_uniform would stop matching.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cohort/detail/kernels.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"

namespace cohort::cuda::launch {
namespace {

constexpr unsigned kThreads = 256;
// Grid-stride loops cover any n; 4096 blocks of 256 threads (1M threads) fill an H100/H200 several
// times over, and the cap keeps grid sizes far from the launch limits.
constexpr std::size_t kMaxBlocks = 4096;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

// Launch errors (bad configuration, no kernel image for this GPU) are reported by the next
// cudaGetLastError; faults inside the kernel surface at the next synchronising call.
#define COHORT_CHECK_LAUNCH() COHORT_CHECK_CUDA(cudaGetLastError())

// ---- element-wise ----

template <class T>
__global__ void fill_kernel(T* x, std::size_t n, T v) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    x[i] = v;
}

template <class F>
__global__ void map1_kernel(F f, const float* x, float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = f(x[i]);
}

template <class F>
__global__ void map2_kernel(F f, const float* a, const float* b, float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = f(a[i], b[i]);
}

template <class G>
__global__ void generate_kernel(G g, float* x, std::size_t n, std::uint64_t offset) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    x[i] = g(offset + static_cast<std::uint64_t>(i));
}

template <class T>
void fill_as(void* x, std::size_t n, std::uint64_t bits, cudaStream_t s) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));  // the low bytes on a little-endian host (x86-64, aarch64)
  fill_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(x), n, v);
  COHORT_CHECK_LAUNCH();
}

template <class F>
void map1(F f, const float* x, float* out, std::size_t n, void* stream) {
  if (n == 0) return;
  map1_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(f, x, out, n);
  COHORT_CHECK_LAUNCH();
}

template <class F>
void map2(F f, const float* a, const float* b, float* out, std::size_t n, void* stream) {
  if (n == 0) return;
  map2_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(f, a, b, out, n);
  COHORT_CHECK_LAUNCH();
}

template <class G>
void generate(G g, float* x, std::size_t n, std::uint64_t offset, void* stream) {
  if (n == 0) return;
  generate_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(g, x, n, offset);
  COHORT_CHECK_LAUNCH();
}

// ---- row reductions: one block per row (grid-stride over rows), tree reduction in shared memory.
// Each reducer's combine() is commutative and associative (argmax carries the index), so the tree
// order cannot change which element wins: the results equal the host's sequential scan.

struct SumRows {
  using Acc = double;
  using Out = float;
  static __host__ __device__ Acc identity() { return 0.0; }
  static __host__ __device__ Acc load(float v, std::size_t) { return v; }
  static __host__ __device__ Acc combine(Acc a, Acc b) { return a + b; }
  static __host__ __device__ Out result(Acc a) { return static_cast<float>(a); }
};

struct MaxRows {  // NaN wins, as in torch.max and the host backend
  using Acc = float;
  using Out = float;
  static __host__ __device__ Acc identity() { return -INFINITY; }
  static __host__ __device__ Acc load(float v, std::size_t) { return v; }
  static __host__ __device__ Acc combine(Acc a, Acc b) {
    if (a != a) return a;
    if (b != b) return b;
    return b > a ? b : a;
  }
  static __host__ __device__ Out result(Acc a) { return a; }
};

struct ArgmaxRows {  // the first NaN if any, else the first index of the maximum
  struct Acc {
    float v;
    std::int64_t i;
  };
  using Out = std::int64_t;
  static __host__ __device__ Acc identity() { return {-INFINITY, INT64_MAX}; }
  static __host__ __device__ Acc load(float v, std::size_t j) { return {v, static_cast<std::int64_t>(j)}; }
  static __host__ __device__ Acc combine(Acc a, Acc b) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an != bn) return an ? a : b;
    if (!an) {
      if (a.v > b.v) return a;
      if (b.v > a.v) return b;
    }
    return a.i < b.i ? a : b;
  }
  static __host__ __device__ Out result(Acc a) { return a.i; }
};

template <class R>
__global__ void reduce_rows_kernel(const float* x, std::size_t rows, std::size_t cols,
                                   typename R::Out* out) {
  __shared__ typename R::Acc partial[kThreads];
  const unsigned t = threadIdx.x;
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    typename R::Acc acc = R::identity();
    for (std::size_t j = t; j < cols; j += blockDim.x) acc = R::combine(acc, R::load(row[j], j));
    partial[t] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {  // blockDim.x is a power of two
      if (t < half) partial[t] = R::combine(partial[t], partial[t + half]);
      __syncthreads();
    }
    if (t == 0) out[r] = R::result(partial[0]);
    __syncthreads();  // partial[0] is read before the next row overwrites it
  }
}

template <class R>
void reduce_rows(const float* x, std::size_t rows, std::size_t cols, typename R::Out* out,
                 void* stream) {
  if (rows == 0) return;
  // A power of two from 32 to kThreads, so short rows (class scores) do not idle 256 threads.
  unsigned threads = 32;
  while (threads < kThreads && threads < cols) threads *= 2;
  const unsigned grid = static_cast<unsigned>(rows < 65536 ? rows : 65536);
  reduce_rows_kernel<R><<<grid, threads, 0, as_stream(stream)>>>(x, rows, cols, out);
  COHORT_CHECK_LAUNCH();
}

__global__ void scale_matrix_kernel(float* c, std::int64_t rows, std::int64_t cols,
                                    std::int64_t ldc, float beta) {
  const std::int64_t total = rows * cols;
  const kernels::Scale f{beta};
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{gridDim.x} * blockDim.x) {
    float& v = c[(e / cols) * ldc + e % cols];
    v = beta == 0.0f ? 0.0f : f(v);
  }
}

}  // namespace

void fill(void* x, std::size_t n, std::size_t elem_bytes, std::uint64_t bits, void* stream) {
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  // A pattern of one repeated byte (zeros above all) is a memset, the copy engine's fast path.
  bool one_byte = true;
  for (std::size_t b = 1; b < elem_bytes; ++b)
    one_byte = one_byte && ((bits >> (8 * b)) & 0xFF) == (bits & 0xFF);
  if (one_byte) {
    COHORT_CHECK_CUDA(cudaMemsetAsync(x, static_cast<int>(bits & 0xFF), n * elem_bytes, s));
    return;
  }
  switch (elem_bytes) {
    case 2: return fill_as<std::uint16_t>(x, n, bits, s);
    case 4: return fill_as<std::uint32_t>(x, n, bits, s);
    case 8: return fill_as<std::uint64_t>(x, n, bits, s);
    default:
      ::cohort::detail::throw_error(__FILE__, __LINE__, "elem_bytes", "cuda",
                                    ::cohort::detail::concat("fill: unsupported element size ",
                                                             elem_bytes, " bytes"));
  }
}

void add(const float* a, const float* b, float* out, std::size_t n, void* stream) {
  map2(kernels::Add{}, a, b, out, n, stream);
}
void sub(const float* a, const float* b, float* out, std::size_t n, void* stream) {
  map2(kernels::Sub{}, a, b, out, n, stream);
}
void mul(const float* a, const float* b, float* out, std::size_t n, void* stream) {
  map2(kernels::Mul{}, a, b, out, n, stream);
}
void axpy(float alpha, const float* x, float* y, std::size_t n, void* stream) {
  map2(kernels::Axpy{alpha}, x, y, y, n, stream);
}
void scale(float alpha, const float* x, float* out, std::size_t n, void* stream) {
  map1(kernels::Scale{alpha}, x, out, n, stream);
}

void reduce_sum(const float* x, std::size_t rows, std::size_t cols, float* out, void* stream) {
  reduce_rows<SumRows>(x, rows, cols, out, stream);
}
void reduce_max(const float* x, std::size_t rows, std::size_t cols, float* out, void* stream) {
  reduce_rows<MaxRows>(x, rows, cols, out, stream);
}
void argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out,
            void* stream) {
  reduce_rows<ArgmaxRows>(x, rows, cols, out, stream);
}

void scale_matrix(float* c, std::int64_t rows, std::int64_t cols, std::int64_t ldc, float beta,
                  void* stream) {
  if (rows <= 0 || cols <= 0) return;
  scale_matrix_kernel<<<blocks_for(static_cast<std::size_t>(rows * cols)), kThreads, 0,
                        as_stream(stream)>>>(c, rows, cols, ldc, beta);
  COHORT_CHECK_LAUNCH();
}

void fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float lo,
                  float hi, void* stream) {
  generate(kernels::UniformAt{seed, lo, hi}, x, n, offset, stream);
}
void fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float mean,
                 float stddev, void* stream) {
  generate(kernels::NormalAt{seed, mean, stddev}, x, n, offset, stream);
}

}  // namespace cohort::cuda::launch
