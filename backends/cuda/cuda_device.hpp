// The CUDA device: one object per visible GPU, memory from cudaMalloc, every op enqueued on the
// device's own stream, GEMM through cuBLAS, the rest through this backend's kernels
// (cuda_kernels.cu), which apply the shared functors of cohort/detail/kernels.hpp.
//
// Internal header: backends/registry.cpp includes it, so it names no CUDA type; the stream and the
// cuBLAS handle are kept as void* and cast back inside cuda_device.cpp.
//
// Threads: every call first makes this device current on the calling thread (cudaSetDevice), so
// a program may drive several GPUs from one thread; as a side effect the thread's current device
// is left at this one.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "cohort/core/device.hpp"

namespace cohort::cuda {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index);
  // Never destroyed by the factory (tensors in statics may outlive any destruction order); the
  // stream and handle are left to the driver's teardown at exit.
  ~CudaDevice() override = default;

  std::string name() const override { return "cuda:" + std::to_string(index_); }
  DeviceType type() const override { return DeviceType::cuda; }
  int index() const override { return index_; }
  bool host_accessible() const override { return false; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override;

  bool supports(Op op, DType dtype) const override;
  void fill(void* x, DType dtype, std::size_t n, double value) override;
  void add(const float* a, const float* b, float* out, std::size_t n) override;
  void sub(const float* a, const float* b, float* out, std::size_t n) override;
  void mul(const float* a, const float* b, float* out, std::size_t n) override;
  void axpy(float alpha, const float* x, float* y, std::size_t n) override;
  void scale(float alpha, const float* x, float* out, std::size_t n) override;
  void reduce(ReduceOp op, const float* x, std::size_t rows, std::size_t cols,
              float* out) override;
  void argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out) override;
  void gemm(const GemmArgs& args) override;
  void fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float lo,
                    float hi) override;
  void fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float mean,
                   float stddev) override;

  // --- layer ops --- (cuda_layers.cu: the shared implementation of cohort/detail/layer_impl.hpp,
  // one GPU thread per work item, GEMMs through cuBLAS)
  void conv2d_forward(const Conv2dArgs& a, const float* x, const float* w, const float* bias,
                      float* y) override;
  void conv2d_backward_data(const Conv2dArgs& a, const float* dy, const float* w,
                            float* dx) override;
  void conv2d_backward_filter(const Conv2dArgs& a, const float* x, const float* dy, float* dw,
                              float* dbias) override;
  void pool2d_forward(const Pool2dArgs& a, const float* x, float* y,
                      std::int32_t* argmax) override;
  void pool2d_backward(const Pool2dArgs& a, const float* dy, const std::int32_t* argmax,
                       float* dx) override;
  void activation_forward(Activation f, float alpha, const float* x, float* y,
                          std::size_t n) override;
  void activation_backward(Activation f, float alpha, const float* x, const float* y,
                           const float* dy, float* dx, std::size_t n) override;
  void bias_add(const ChannelDims& d, const float* bias, float* y, Activation f,
                float alpha) override;
  void bias_grad(const ChannelDims& d, const float* dy, float* dbias) override;
  void softmax_forward(bool log, const ChannelDims& d, const float* x, float* y) override;
  void softmax_backward(bool log, const ChannelDims& d, const float* y, const float* dy,
                        float* dx) override;
  void batch_norm_forward(const BatchNormArgs& a, const float* x, const float* gamma,
                          const float* beta, float* running_mean, float* running_var, float* y,
                          float* save_mean, float* save_invstd) override;
  void batch_norm_backward(const BatchNormArgs& a, const float* x, const float* dy,
                           const float* gamma, const float* save_mean, const float* save_invstd,
                           float* dx, float* dgamma, float* dbeta) override;
  void layer_norm_forward(const LayerNormArgs& a, const float* x, const float* gamma,
                          const float* beta, float* y, float* save_mean,
                          float* save_rstd) override;
  void layer_norm_backward(const LayerNormArgs& a, const float* x, const float* dy,
                           const float* gamma, const float* save_mean, const float* save_rstd,
                           float* dx, float* dgamma, float* dbeta) override;
  void dropout_forward(const DropoutArgs& a, const float* x, float* y, std::size_t n) override;
  void dropout_backward(const DropoutArgs& a, const float* dy, float* dx, std::size_t n) override;
  void nll_forward(const float* logp, const std::int64_t* target, std::size_t rows,
                   std::size_t classes, float* loss) override;
  void nll_backward(const std::int64_t* target, std::size_t rows, std::size_t classes,
                    float scale, float* dx) override;
  void cross_entropy_backward(const float* logp, const std::int64_t* target, std::size_t rows,
                              std::size_t classes, float scale, float* dx) override;
  // --- end of layer ops ---

  // --- optimizer ops --- (cuda_optim.cu)
  void sgd_step(const SgdArgs& args, float* param, const float* grad, float* momentum_buffer,
                std::size_t n) override;
  void adam_step(const AdamArgs& args, float* param, const float* grad, float* exp_avg,
                 float* exp_avg_sq, float* max_exp_avg_sq, std::size_t n) override;
  void adadelta_step(const AdadeltaArgs& args, float* param, const float* grad, float* square_avg,
                     float* acc_delta, std::size_t n) override;
  void rmsprop_step(const RmspropArgs& args, float* param, const float* grad, float* square_avg,
                    float* grad_avg, float* momentum_buffer, std::size_t n) override;

 private:
  // Makes this device current on the calling thread.
  void activate() const;
  // Makes this device current and returns its stream (a cudaStream_t), creating it on first use.
  void* stream();
  // Same for the cuBLAS handle, bound to stream().
  void* blas();

  int index_;
  // Created on first use under init_mu_ and published through the atomics, so the hot path is one
  // acquire load. A failed creation throws and is retried by the next call; std::call_once is not
  // used because libstdc++'s pthread_once-based version has hung on exactly that (GCC bug 66146).
  std::mutex init_mu_;
  std::atomic<void*> stream_{nullptr};  // cudaStream_t
  std::atomic<void*> blas_{nullptr};    // cublasHandle_t
  // Scratch for the convolutions' column matrices (cuda_layers.cu): grow-only device memory,
  // held under scratch_mu_ for a whole op so two host threads never interleave uses of it.
  std::mutex scratch_mu_;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

// The registry's entry for this backend: "cuda", score 100 (preferred over the host when a GPU is
// usable). count() never throws: without a driver or a GPU it returns 0 and says why.
DeviceFactory factory();

}  // namespace cohort::cuda
