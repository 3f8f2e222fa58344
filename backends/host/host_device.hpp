// The host device: ordinary memory, every op run with Kokkos on the host execution space that
// Debian's Kokkos ships (Serial), GEMM through oneDNN's sgemm. Internal header: nothing outside
// backends/ includes it, and it names no Kokkos or oneDNN type.
#pragma once

#include "cohort/core/device.hpp"

namespace cohort::host {

class HostDevice final : public Device {
 public:
  HostDevice();

  std::string name() const override { return "host"; }
  DeviceType type() const override { return DeviceType::host; }
  bool host_accessible() const override { return true; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override {}

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

  // --- layer ops --- (host_layers.cpp: the shared implementation of cohort/detail/layer_impl.hpp
  // run by Kokkos, GEMMs through sgemm)
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

  // --- optimizer ops --- (host_optim.cpp)
  void sgd_step(const SgdArgs& args, float* param, const float* grad, float* momentum_buffer,
                std::size_t n) override;
  void adam_step(const AdamArgs& args, float* param, const float* grad, float* exp_avg,
                 float* exp_avg_sq, float* max_exp_avg_sq, std::size_t n) override;
  void adadelta_step(const AdadeltaArgs& args, float* param, const float* grad, float* square_avg,
                     float* acc_delta, std::size_t n) override;
  void rmsprop_step(const RmspropArgs& args, float* param, const float* grad, float* square_avg,
                    float* grad_avg, float* momentum_buffer, std::size_t n) override;
};

// The registry's entry for this backend.
DeviceFactory factory();

// Initialises Kokkos on first use unless the program already did; finalises it at exit only if
// cohort initialised it (a program that initialised Kokkos itself keeps ownership).
void ensure_kokkos();

// Caps the host GEMM's OpenMP threads at cores / ranks on this host unless OMP_NUM_THREADS is
// set; returns the thread count in effect (host_threads.cpp).
int configure_threads();

// GEMM through oneDNN (kept in its own file so the BLAS choice is one room).
void sgemm(const GemmArgs& g);

}  // namespace cohort::host
