// CUDA op table: memory and copies through the CUDA runtime on the device's own stream, GEMM
// through cuBLAS, everything else through the launchers of cuda_kernels.cu. Plain C++ (the host
// compiler builds it); only the .cu file needs nvcc.
#include "cuda_device.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"

namespace cohort::cuda {
namespace {

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cublasHandle_t as_blas(void* h) { return static_cast<cublasHandle_t>(h); }

template <class T>
std::uint64_t bits_of(T v) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t), "element wider than 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

// What cudaGetDeviceCount said, asked once per process: the set of visible devices is fixed when
// the runtime initialises (CUDA_VISIBLE_DEVICES is read then), and one answer keeps count(), get()
// and describe_devices() consistent with each other.
struct Probe {
  int count = 0;
  std::string why_not;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky; keep it from surfacing in a later launch check
      r.why_not = std::string("no CUDA device: cudaGetDeviceCount returned ") +
                  cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    } else {
      r.count = n;
      if (n == 0) r.why_not = "no CUDA device: cudaGetDeviceCount found 0 devices";
    }
    if (r.count == 0) {
      if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
        r.why_not += std::string(" with CUDA_VISIBLE_DEVICES=") + visible;
    }
    return r;
  }();
  return p;
}

}  // namespace

CudaDevice::CudaDevice(int index) : index_(index) {}

void CudaDevice::activate() const { COHORT_CHECK_CUDA(cudaSetDevice(index_)); }

void* CudaDevice::stream() {
  activate();
  if (void* s = stream_.load(std::memory_order_acquire)) return s;
  std::lock_guard<std::mutex> lock(init_mu_);
  if (void* s = stream_.load(std::memory_order_relaxed)) return s;
  // Non-blocking: our ops are ordered on this stream only and never wait for (or hold up) work on
  // the legacy default stream that other libraries in the process may use.
  cudaStream_t s = nullptr;
  COHORT_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_.store(s, std::memory_order_release);
  return s;
}

void* CudaDevice::blas() {
  void* s = stream();  // also makes this device current, which cublasCreate binds the handle to
  if (void* h = blas_.load(std::memory_order_acquire)) return h;
  std::lock_guard<std::mutex> lock(init_mu_);
  if (void* h = blas_.load(std::memory_order_relaxed)) return h;
  // Default math mode: full FP32 sgemm (cuBLAS uses TF32 only when asked to).
  cublasHandle_t h = nullptr;
  COHORT_CHECK_CUBLAS(cublasCreate(&h));
  const cublasStatus_t st = cublasSetStream(h, as_stream(s));
  if (st != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    COHORT_CHECK_CUBLAS(st);
  }
  blas_.store(h, std::memory_order_release);
  return h;
}

// ---- memory ----

void* CudaDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  activate();
  void* p = nullptr;
  // cudaMalloc returns 256-byte aligned memory, above the 64 bytes the contract asks for.
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    ::cohort::detail::throw_error(__FILE__, __LINE__, "cudaMalloc(&p, bytes)", "cuda",
                                  ::cohort::detail::concat("cannot allocate ", bytes, " bytes on ",
                                                           name(), ": ", detail::describe(e)));
  }
  return p;
}

void CudaDevice::deallocate(void* p, std::size_t) noexcept {
  if (p == nullptr) return;
  // cudaFree waits for the whole device, so memory still read by queued ops is not reused early.
  // Errors are ignored: at exit the runtime may already be unloading (cudaErrorCudartUnloading)
  // while tensors held in statics are still being released.
  if (cudaSetDevice(index_) == cudaSuccess) (void)cudaFree(p);
  (void)cudaGetLastError();
}

void CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t s = as_stream(stream());
  COHORT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
  COHORT_CHECK_CUDA(cudaStreamSynchronize(s));  // the contract: the host buffer is free on return
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t s = as_stream(stream());
  COHORT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
  COHORT_CHECK_CUDA(cudaStreamSynchronize(s));
}

void CudaDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  COHORT_CHECK_CUDA(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream())));
}

void CudaDevice::synchronize() { COHORT_CHECK_CUDA(cudaStreamSynchronize(as_stream(stream()))); }

// ---- op table ----

bool CudaDevice::supports(Op op, DType dtype) const {
  if (op == Op::fill) return true;
  return dtype == DType::f32 && op != Op::count_;
}

void CudaDevice::fill(void* x, DType dtype, std::size_t n, double v) {
  if (n == 0) return;
  // The value is converted on the host exactly as the host backend converts it (bf16 rounding
  // included), and the kernel only replicates the resulting bytes.
  std::uint64_t bits = 0;
  switch (dtype) {
    case DType::f32: bits = bits_of(static_cast<float>(v)); break;
    case DType::f64: bits = bits_of(v); break;
    case DType::bf16: bits = bits_of(float_to_bf16(static_cast<float>(v))); break;
    case DType::i32: bits = bits_of(static_cast<std::int32_t>(v)); break;
    case DType::i64: bits = bits_of(static_cast<std::int64_t>(v)); break;
    case DType::u8: bits = bits_of(static_cast<std::uint8_t>(v)); break;
  }
  launch::fill(x, n, dtype_size(dtype), bits, stream());
}

void CudaDevice::add(const float* a, const float* b, float* out, std::size_t n) {
  launch::add(a, b, out, n, stream());
}
void CudaDevice::sub(const float* a, const float* b, float* out, std::size_t n) {
  launch::sub(a, b, out, n, stream());
}
void CudaDevice::mul(const float* a, const float* b, float* out, std::size_t n) {
  launch::mul(a, b, out, n, stream());
}
void CudaDevice::axpy(float alpha, const float* x, float* y, std::size_t n) {
  launch::axpy(alpha, x, y, n, stream());
}
void CudaDevice::scale(float alpha, const float* x, float* out, std::size_t n) {
  launch::scale(alpha, x, out, n, stream());
}

void CudaDevice::reduce(ReduceOp op, const float* x, std::size_t rows, std::size_t cols,
                        float* out) {
  COHORT_CHECK_IN("cuda", cols >= 1 || rows == 0, "reduce on ", name(), ": ", rows,
                  " rows of 0 columns");
  if (op == ReduceOp::sum)
    launch::reduce_sum(x, rows, cols, out, stream());
  else
    launch::reduce_max(x, rows, cols, out, stream());
}

void CudaDevice::argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out) {
  COHORT_CHECK_IN("cuda", cols >= 1 || rows == 0, "argmax on ", name(), ": ", rows,
                  " rows of 0 columns");
  launch::argmax(x, rows, cols, out, stream());
}

void CudaDevice::gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // op(A) op(B) is all zeros: C = beta C, with beta == 0 overwriting NaN
    launch::scale_matrix(g.c, g.m, g.n, g.ldc, g.beta, stream());
    return;
  }
  // cuBLAS is column-major, and a row-major matrix read column-major is its transpose. So the
  // row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T: swap the
  // operands and the m/n extents, keep each operand's own transpose flag and leading dimension.
  // The _64 entry point takes 64-bit extents, so no size needs narrowing to int.
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasStatus_t st = cublasSgemm_64(as_blas(blas()), op_b, op_a, g.n, g.m, g.k, &g.alpha,
                                           g.b, g.ldb, g.a, g.lda, &g.beta, g.c, g.ldc);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasSgemm_64", "cuda",
        ::cohort::detail::concat("sgemm on ", name(), " failed (", detail::describe(st),
                                 ") for m=", g.m, " n=", g.n, " k=", g.k, " lda=", g.lda,
                                 " ldb=", g.ldb, " ldc=", g.ldc, g.trans_a ? " trans_a" : "",
                                 g.trans_b ? " trans_b" : ""));
}

void CudaDevice::fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                              float lo, float hi) {
  launch::fill_uniform(x, n, seed, offset, lo, hi, stream());
}
void CudaDevice::fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                             float mean, float stddev) {
  launch::fill_normal(x, n, seed, offset, mean, stddev, stream());
}

// ---- registry entry ----

DeviceFactory factory() {
  DeviceFactory f;
  f.name = "cuda";
  f.score = 100;
  f.count = [](std::string* why_not) {
    const Probe& p = probe();
    if (p.count == 0 && why_not) *why_not = p.why_not;
    return p.count;
  };
  f.get = [](int index) -> Device& {
    const int n = probe().count;
    COHORT_CHECK_IN("cuda", index >= 0 && index < n, "no device cuda:", index, " (", n,
                    " CUDA devices visible", n == 0 ? ": " + probe().why_not : std::string(),
                    ")");
    // Never destroyed, like the devices themselves: tensors in statics may be released after any
    // static destructor of ours has run.
    static std::mutex* mu = new std::mutex();
    static std::vector<CudaDevice*>* devices = new std::vector<CudaDevice*>();
    std::lock_guard<std::mutex> lock(*mu);
    if (devices->size() < static_cast<std::size_t>(n)) devices->resize(n, nullptr);
    CudaDevice*& d = (*devices)[static_cast<std::size_t>(index)];
    if (d == nullptr) d = new CudaDevice(index);
    return *d;
  };
  return f;
}

}  // namespace cohort::cuda
