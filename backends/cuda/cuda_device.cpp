// The CUDA device's memory, copies, streams and events through the CUDA runtime, its GEMM through
// cuBLAS, and the registry's entry. Plain C++ (the host compiler builds it); the op table's kernels
// are cuda_ops.cu, the only file that needs nvcc.
#include "cuda_device.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cuda_check.hpp"
#include "cudnn_ops.hpp"

namespace cohort::cuda {
namespace {

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cublasHandle_t as_blas(void* h) { return static_cast<cublasHandle_t>(h); }

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
  // Keep freed pool memory cached instead of returning it to the driver at every synchronisation.
  cudaMemPool_t pool = nullptr;
  COHORT_CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, index_));
  std::uint64_t keep = UINT64_MAX;
  COHORT_CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
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

Cudnn& CudaDevice::cudnn() {
  if (Cudnn* c = cudnn_.load(std::memory_order_acquire)) return *c;
  std::lock_guard<std::mutex> lock(init_mu_);
  if (Cudnn* c = cudnn_.load(std::memory_order_relaxed)) return *c;
  Cudnn* c = new Cudnn(*this);  // never destroyed, like the device (see the destructor's note)
  cudnn_.store(c, std::memory_order_release);
  return *c;
}

// ---- memory ----

void* CudaDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* s = stream();
  void* p = nullptr;
  // From the device's default memory pool, ordered on the compute stream. The pool keeps freed
  // memory (release threshold raised below) so a training step after the first allocates nothing
  // from the driver. Pool memory is 256-byte aligned, above the 64 bytes the contract asks for.
  const cudaError_t e = cudaMallocAsync(&p, bytes, as_stream(s));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    std::size_t free_bytes = 0, total = 0;
    (void)cudaMemGetInfo(&free_bytes, &total);
    (void)cudaGetLastError();
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cudaMallocAsync(&p, bytes, stream)", "cuda",
        ::cohort::detail::concat("cannot allocate ", bytes, " bytes on ", name(), " (",
                                 free_bytes, " of ", total, " bytes free): ",
                                 detail::describe(e)));
  }
  return p;
}

void CudaDevice::deallocate(void* p, std::size_t) noexcept {
  if (p == nullptr) return;
  // Stream-ordered: the memory returns to the pool once the compute stream's queued work (which
  // may still read it) has run; no device-wide wait. Errors are ignored: at exit the runtime may
  // already be unloading while tensors held in statics are still being released.
  if (cudaSetDevice(index_) == cudaSuccess) {
    if (void* s = stream_.load(std::memory_order_acquire))
      (void)cudaFreeAsync(p, as_stream(s));
    else
      (void)cudaFree(p);
  }
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

// ---- streams and events ----

void* CudaDevice::create_stream() {
  activate();
  cudaStream_t s = nullptr;
  COHORT_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
void CudaDevice::destroy_stream(void* s) noexcept {
  if (s != nullptr && cudaSetDevice(index_) == cudaSuccess) (void)cudaStreamDestroy(as_stream(s));
  (void)cudaGetLastError();
}
void* CudaDevice::create_event() {
  activate();
  cudaEvent_t e = nullptr;
  COHORT_CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}
void CudaDevice::destroy_event(void* e) noexcept {
  if (e != nullptr && cudaSetDevice(index_) == cudaSuccess)
    (void)cudaEventDestroy(static_cast<cudaEvent_t>(e));
  (void)cudaGetLastError();
}
void CudaDevice::record_event(void* e, void* s) {
  void* compute = stream();
  COHORT_CHECK_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(e), as_stream(s ? s : compute)));
}
void CudaDevice::stream_wait_event(void* s, void* e) {
  void* compute = stream();
  COHORT_CHECK_CUDA(
      cudaStreamWaitEvent(as_stream(s ? s : compute), static_cast<cudaEvent_t>(e), 0));
}
bool CudaDevice::query_event(void* e) {
  activate();
  const cudaError_t st = cudaEventQuery(static_cast<cudaEvent_t>(e));
  if (st == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  COHORT_CHECK_CUDA(st);
  return true;
}
void CudaDevice::synchronize_event(void* e) {
  activate();
  COHORT_CHECK_CUDA(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));
}
void CudaDevice::synchronize_stream(void* s) {
  void* compute = stream();
  COHORT_CHECK_CUDA(cudaStreamSynchronize(as_stream(s ? s : compute)));
}

// ---- GEMM ----

void CudaDevice::gemm(const GemmArgs& g) {
  // cuBLAS is column-major, and a row-major matrix read column-major is its transpose. So the
  // row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T: swap the
  // operands and the m/n extents, keep each operand's own transpose flag and leading dimension.
  // The _64 entry point takes 64-bit extents, so no size needs narrowing to int.
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t h = as_blas(blas());
  // Full FP32 products unless the user allowed TF32 (cohort/core/math_mode.hpp); set per call so a
  // change of the mode applies to the next GEMM. A host-side setting: no device work.
  COHORT_CHECK_CUBLAS(
      cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  const cublasStatus_t st = cublasSgemm_64(h, op_b, op_a, g.n, g.m, g.k, &g.alpha,
                                           g.b, g.ldb, g.a, g.lda, &g.beta, g.c, g.ldc);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasSgemm_64", "cuda",
        ::cohort::detail::concat("sgemm on ", name(), " failed (", detail::describe(st),
                                 ") for m=", g.m, " n=", g.n, " k=", g.k, " lda=", g.lda,
                                 " ldb=", g.ldb, " ldc=", g.ldc, g.trans_a ? " trans_a" : "",
                                 g.trans_b ? " trans_b" : ""));
}

void CudaDevice::gemm_batched(const calls::GemmBatched& g) {
  // Operands swapped as in gemm() above; the batch strides follow their operands.
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t h = as_blas(blas());
  COHORT_CHECK_CUBLAS(
      cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  const cublasStatus_t st = cublasSgemmStridedBatched_64(
      h, op_b, op_a, g.n, g.m, g.k, &g.alpha, g.b, g.ldb, g.stride_b, g.a, g.lda, g.stride_a,
      &g.beta, g.c, g.ldc, g.stride_c, g.batch);
  if (st != CUBLAS_STATUS_SUCCESS)
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "cublasSgemmStridedBatched_64", "cuda",
        ::cohort::detail::concat("batched sgemm on ", name(), " failed (", detail::describe(st),
                                 ") for batch=", g.batch, " m=", g.m, " n=", g.n, " k=", g.k));
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
