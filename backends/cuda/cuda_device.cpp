// The CUDA device's memory (the caching allocator over cudaMalloc / cudaFree, pinned host memory),
// copies, streams and events through the CUDA runtime, its library handles, and the registry's
// entry. Plain C++ (the host compiler builds it); the op table is op_table.cu, the only file that
// needs nvcc, and each op family's vendor calls are in the file named after it (gemm.cpp,
// conv2d.cpp, ...).
#include "cuda_device.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "common/caching_allocator.hpp"
#include "cuda_check.hpp"
#include "cudnn.hpp"

namespace cohort::cuda {
namespace {

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

// The caching allocator's source: cudaMalloc and cudaFree on this device. cudaMalloc's blocks are
// 256-byte aligned (the Device contract asks for 64).
class CudaRawMemory final : public memory::RawMemory {
 public:
  explicit CudaRawMemory(CudaDevice& device) : device_(device) {}
  void* raw_alloc(std::size_t bytes) override {
    COHORT_CHECK_CUDA(cudaSetDevice(device_.index()));
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: the allocator releases its cache and retries
      return nullptr;
    }
    COHORT_CHECK_CUDA(e);
    return p;
  }
  void raw_free(void* p, std::size_t) noexcept override {
    // Errors are ignored: at exit the runtime may already be unloading.
    if (cudaSetDevice(device_.index()) == cudaSuccess) (void)cudaFree(p);
    (void)cudaGetLastError();
  }
  void synchronize() override { device_.synchronize(); }
  bool device_memory(std::size_t* free_bytes, std::size_t* total) noexcept override {
    if (cudaSetDevice(device_.index()) != cudaSuccess ||
        cudaMemGetInfo(free_bytes, total) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return true;
  }
  std::string device_name() const override { return device_.name(); }
  const char* backend() const override { return "cuda"; }

 private:
  CudaDevice& device_;
};

}  // namespace

CudaDevice::CudaDevice(int index)
    : index_(index), raw_(std::make_unique<CudaRawMemory>(*this)),
      cache_(std::make_unique<memory::CachingAllocator>(*raw_)) {}

CudaDevice::~CudaDevice() = default;

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

Cudnn& CudaDevice::cudnn() {
  if (Cudnn* c = cudnn_.load(std::memory_order_acquire)) return *c;
  // Before the lock, as in blas(): Cudnn's constructor asks for stream(), which takes init_mu_
  // itself when the stream does not exist yet (a non-recursive mutex: it would deadlock).
  (void)stream();
  std::lock_guard<std::mutex> lock(init_mu_);
  if (Cudnn* c = cudnn_.load(std::memory_order_relaxed)) return *c;
  Cudnn* c = new Cudnn(*this);  // never destroyed, like the device (see the destructor's note)
  cudnn_.store(c, std::memory_order_release);
  return *c;
}

// ---- memory ----

void* CudaDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  // Ordered on the compute stream like every op (see caching_allocator.hpp's contract): a cached
  // block is handed out without waiting for kernels that still read it, because whatever the new
  // owner enqueues runs after them. Out of memory is a cohort::Error naming the op, the bytes
  // asked and the bytes free.
  return cache_->allocate(bytes);
}

void CudaDevice::deallocate(void* p, std::size_t) noexcept {
  // Back to the cache: no CUDA call, no synchronisation (and safe at exit, when the runtime may
  // already be unloading while tensors held in statics are released).
  cache_->deallocate(p);
}

void CudaDevice::release(void* p) {
  activate();
  cache_->release(p);
}

MemoryStats CudaDevice::memory_stats() const {
  MemoryStats s = cache_->stats();
  s.host_waits = host_waits_.load(std::memory_order_relaxed);
  s.pinned_allocs = pinned_allocs_.load(std::memory_order_relaxed);
  s.pinned_frees = pinned_frees_.load(std::memory_order_relaxed);
  s.pinned_bytes = pinned_bytes_.load(std::memory_order_relaxed);
  return s;
}

void CudaDevice::empty_cache() { cache_->empty_cache(); }
void CudaDevice::reset_peak_memory_stats() { cache_->reset_peak(); }

void* CudaDevice::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  activate();
  void* p = nullptr;
  // Portable: pinned for every device's context, so a loader may feed any GPU from it.
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    ::cohort::detail::throw_error(__FILE__, __LINE__, "cudaHostAlloc(&p, bytes, portable)", "cuda",
                                  ::cohort::detail::concat("cannot allocate ", bytes,
                                                           " bytes of pinned host memory for ",
                                                           name(), ": ", detail::describe(e)));
  }
  pinned_allocs_.fetch_add(1, std::memory_order_relaxed);
  pinned_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}

void CudaDevice::deallocate_pinned(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (cudaSetDevice(index_) == cudaSuccess) (void)cudaFreeHost(p);
  (void)cudaGetLastError();
  pinned_frees_.fetch_add(1, std::memory_order_relaxed);
  pinned_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

// The asynchronous copies in either direction: on `stream`, or the compute stream for nullptr.
void CudaDevice::copy_async(void* dst, const void* src, std::size_t bytes, int to_device,
                            void* stream) {
  if (bytes == 0) return;
  void* compute = this->stream();
  COHORT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes,
                                    to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                    as_stream(stream ? stream : compute)));
}

void CudaDevice::copy_from_host_async(void* dst, const void* src, std::size_t bytes,
                                      void* stream) {
  copy_async(dst, src, bytes, 1, stream);
}

void CudaDevice::copy_to_host_async(void* dst, const void* src, std::size_t bytes,
                                    void* stream) {
  copy_async(dst, src, bytes, 0, stream);
}

bool CudaDevice::register_host_memory(void* p, std::size_t bytes) {
  if (p == nullptr || bytes == 0) return true;
  activate();
  // Portable: page-locked for every device's context. A failure (memory the driver cannot lock,
  // such as some file mappings, or the lock limit) is not an error: copies then stage through
  // the driver's own buffers and may block.
  if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

void CudaDevice::unregister_host_memory(void* p) noexcept {
  if (p == nullptr) return;
  if (cudaSetDevice(index_) == cudaSuccess) (void)cudaHostUnregister(p);
  (void)cudaGetLastError();
}

void CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t s = as_stream(stream());
  COHORT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
  count_wait();
  COHORT_CHECK_CUDA(cudaStreamSynchronize(s));  // the contract: the host buffer is free on return
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t s = as_stream(stream());
  COHORT_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
  count_wait();
  COHORT_CHECK_CUDA(cudaStreamSynchronize(s));
}

void CudaDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  COHORT_CHECK_CUDA(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream())));
}

void CudaDevice::synchronize() {
  void* s = stream();
  count_wait();
  COHORT_CHECK_CUDA(cudaStreamSynchronize(as_stream(s)));
}

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
  if (s == nullptr || s == compute) count_wait();
  COHORT_CHECK_CUDA(cudaStreamSynchronize(as_stream(s ? s : compute)));
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
