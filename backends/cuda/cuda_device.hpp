// The CUDA device: one object per visible GPU, memory from our caching allocator over cudaMalloc /
// cudaFree (backends/common/caching_allocator.hpp: freed blocks are reused in compute-stream order,
// so after a training loop's first step neither is called and no free synchronises the device),
// every op enqueued on the device's compute stream (op_table.cu): the shared op families of
// backends/common/ops/ on Thrust (thrust_exec.hpp), with the vendor calls of each family in the file
// named after it: convolutions (conv2d.cpp), training batch norm (norm.cpp) and softmax
// (softmax_loss.cpp) through cuDNN, GEMMs (gemm.cpp) and the linear bias gradient (activation.cpp)
// through cuBLAS.
// Pinned host memory (cudaHostAlloc) and asynchronous uploads serve the data loader's staging.
//
// Internal header: backends/registry.cpp includes it, so it names no CUDA type; the stream and the
// cuBLAS handle are kept as void* and cast back inside cuda_device.cpp.
//
// Threads: every call first makes this device current on the calling thread (cudaSetDevice), so
// a program may drive several GPUs from one thread; as a side effect the thread's current device
// is left at this one.
//
// Contract: one thread at a time runs ops on a device (run(), gemm(), gemm_batched(), gemv()). The
// cuBLAS and cuDNN handles are one per device, and their documentation allows neither concurrent
// calls on a cuDNN handle nor a configuration change (the math mode) on a cuBLAS handle while
// another thread uses it; the math-mode and ones-vector caches below rely on the same rule. Today
// only the training thread runs ops (data-loader threads copy and record events, which may run
// concurrently). Memory, copies, streams and events are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cohort/backend/op_list.hpp"
#include "cohort/backend/routes.hpp"
#include "cohort/core/device.hpp"

namespace cohort::memory {
class CachingAllocator;
class RawMemory;
}  // namespace cohort::memory

namespace cohort::cuda {

class Cudnn;
namespace seams {
struct CublasGemm;
struct CublasGemv;
}  // namespace seams

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index);
  // Never destroyed by the factory (tensors in statics may outlive any destruction order); the
  // stream, handle and cached blocks are left to the driver's teardown at exit.
  ~CudaDevice() override;

  std::string name() const override { return "cuda:" + std::to_string(index_); }
  DeviceType type() const override { return DeviceType::cuda; }
  int index() const override { return index_; }
  bool host_accessible() const override { return false; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  // To the driver after the stream, not to the cache (CachingAllocator::release): benchmark mode's
  // timing workspace. Throws when the stream's wait fails (the block then stays the caller's).
  void release(void* p);
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override;
  void make_current() override { activate(); }

  // The caching allocator's counts plus this device's host waits and pinned memory.
  MemoryStats memory_stats() const override;
  void empty_cache() override;
  void reset_peak_memory_stats() override;
  // cudaHostAlloc / cudaFreeHost; uploads from it with cudaMemcpyAsync on the given stream.
  void* allocate_pinned(std::size_t bytes) override;
  void deallocate_pinned(void* p, std::size_t bytes) noexcept override;
  void copy_from_host_async(void* dst, const void* src, std::size_t bytes, void* stream) override;
  void copy_to_host_async(void* dst, const void* src, std::size_t bytes, void* stream) override;
  // cudaHostRegister (portable) / cudaHostUnregister.
  bool register_host_memory(void* p, std::size_t bytes) override;
  void unregister_host_memory(void* p) noexcept override;

  void* create_stream() override;
  void destroy_stream(void* stream) noexcept override;
  void* create_event() override;
  void destroy_event(void* event) noexcept override;
  void record_event(void* event, void* stream) override;
  void stream_wait_event(void* stream, void* event) override;
  bool query_event(void* event) override;
  void synchronize_event(void* event) override;
  void synchronize_stream(void* stream) override;

  // op_table.cu: the shared families on Thrust, vendor libraries first where they take the op.
  bool supports(const OpCall& call) const override;
  void run(const OpCall& call) override;

  // Row-major sgemm through cuBLAS on the compute stream (m, n, k >= 1); gemm.cpp.
  void gemm(const GemmArgs& g);
  // The same for a strided batch, one cuBLAS call (m, n, k, batch >= 1).
  void gemm_batched(const calls::GemmBatched& g);
  // Under autocast (op_table.cu): the seam's GEMM with A and B replaced by 16-bit copies of the
  // operands (`t` bf16 or f16, same layout), products summed in f32 and C written in f32:
  // cublasGemmStridedBatchedEx_64 with CUBLAS_COMPUTE_32F, tensor cores where the GPU has them.
  void gemm_lowp(const seams::CublasGemm& v, const void* A16, const void* B16, DType t);
  // cublasSgemv_64 on the compute stream with the seam's values (seams/cublas_gemm.hpp);
  // activation.cpp, with ones_block().
  void gemv(const seams::CublasGemv& v);
  // Device memory for at least n floats, kept for the device's lifetime: the ones vector the linear
  // bias gradient multiplies by. *to_fill is 0 when the block already holds ones, else the count of
  // floats of a new block (contents undefined) that the caller sets to 1 on the compute stream
  // before use (op_table.cu: activation.cpp is compiled without nvcc).
  float* ones_block(std::int64_t n, std::int64_t* to_fill);
  // Makes this device current and returns its compute stream (a cudaStream_t), creating it on
  // first use.
  void* stream();
  // This device's cuDNN handle and convolution-algorithm cache, created on first use.
  Cudnn& cudnn();

 private:
  // Makes this device current on the calling thread.
  void activate() const;
  // Same for the cuBLAS handle, bound to stream().
  void* blas();
  // cublasSetMathMode on `handle` (the cuBLAS handle) when allow_tf32() differs from the mode last
  // set; a cuBLAS handle starts in CUBLAS_DEFAULT_MATH.
  void set_math_mode(void* handle);
  // One more blocking wait on the compute stream (MemoryStats::host_waits).
  void count_wait() { host_waits_.fetch_add(1, std::memory_order_relaxed); }
  // cudaMemcpyAsync host -> device (to_device 1) or device -> host (0) on `stream` (nullptr: the
  // compute stream).
  void copy_async(void* dst, const void* src, std::size_t bytes, int to_device, void* stream);

  int index_;
  std::unique_ptr<memory::RawMemory> raw_;          // cudaMalloc / cudaFree on this device
  std::unique_ptr<memory::CachingAllocator> cache_;  // over raw_
  std::atomic<std::uint64_t> host_waits_{0}, pinned_allocs_{0}, pinned_frees_{0};
  std::atomic<std::size_t> pinned_bytes_{0};
  // Created on first use under init_mu_ and published through the atomics, so the hot path is one
  // acquire load. A failed creation throws and is retried by the next call; std::call_once is not
  // used because libstdc++'s pthread_once-based version has hung on exactly that (GCC bug 66146).
  std::mutex init_mu_;
  std::atomic<void*> stream_{nullptr};  // cudaStream_t
  std::atomic<void*> blas_{nullptr};    // cublasHandle_t
  std::atomic<Cudnn*> cudnn_{nullptr};
  // Touched only by the thread running ops (the contract above).
  int math_mode_ = 0;               // 1: CUBLAS_TF32_TENSOR_OP_MATH set on blas_, 0: default math
  float* ones_ = nullptr;           // ones_count_ ones, from this device's allocator
  std::int64_t ones_count_ = 0;
};

// The registry's entry for this backend: "cuda", score 100 (preferred over the host when a GPU is
// usable). count() never throws: without a driver or a GPU it returns 0 and says why.
DeviceFactory factory();

// Where each op runs on this backend (op_table.cu, next to the routing itself).
DeviceRoutes op_routes();

}  // namespace cohort::cuda
