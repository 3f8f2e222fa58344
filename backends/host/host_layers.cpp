// Host layer ops: the shared implementation (cohort/detail/layer_impl.hpp) run with Kokkos on the
// host execution space, GEMMs through oneDNN's sgemm. This file only says how the host launches
// work; the loops and the math live in the shared headers the CUDA backend runs too.
#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <memory>

#include "cohort/core/error.hpp"
#include "cohort/detail/layer_impl.hpp"
#include "host_device.hpp"

namespace cohort::host {
namespace {

struct HostExec {
  template <class F>
  void for_each(const char* label, std::int64_t count, const F& f) const {
    if (count <= 0) return;
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Kokkos::Serial, Kokkos::IndexType<std::int64_t>>(0, count), f);
  }
  void gemm(const GemmArgs& g) const { sgemm(g); }
  // One grow-only buffer per thread: ops on the host run on the calling thread, so two threads
  // sharing the device never share scratch memory.
  float* scratch(std::size_t floats) const {
    struct Buffer {
      float* p = nullptr;
      std::size_t n = 0;
      ~Buffer() { std::free(p); }
    };
    thread_local Buffer buf;
    if (floats > buf.n) {
      std::free(buf.p);
      buf.p = nullptr;
      buf.n = 0;
      const std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      buf.p = static_cast<float*>(std::aligned_alloc(64, bytes));
      COHORT_CHECK_IN("host", buf.p != nullptr, "out of host memory allocating ", bytes,
                      " bytes of scratch for a layer op");
      buf.n = floats;
    }
    return buf.p;
  }
};

using Impl = kernels::LayerImpl<HostExec>;

}  // namespace

void HostDevice::conv2d_forward(const Conv2dArgs& a, const float* x, const float* w,
                                const float* bias, float* y) {
  HostExec e;
  Impl::conv2d_forward(e, a, x, w, bias, y);
}
void HostDevice::conv2d_backward_data(const Conv2dArgs& a, const float* dy, const float* w,
                                      float* dx) {
  HostExec e;
  Impl::conv2d_backward_data(e, a, dy, w, dx);
}
void HostDevice::conv2d_backward_filter(const Conv2dArgs& a, const float* x, const float* dy,
                                        float* dw, float* dbias) {
  HostExec e;
  Impl::conv2d_backward_filter(e, a, x, dy, dw, dbias);
}
void HostDevice::pool2d_forward(const Pool2dArgs& a, const float* x, float* y,
                                std::int32_t* argmax) {
  HostExec e;
  Impl::pool2d_forward(e, a, x, y, argmax);
}
void HostDevice::pool2d_backward(const Pool2dArgs& a, const float* dy, const std::int32_t* argmax,
                                 float* dx) {
  HostExec e;
  Impl::pool2d_backward(e, a, dy, argmax, dx);
}
void HostDevice::activation_forward(Activation f, float alpha, const float* x, float* y,
                                    std::size_t n) {
  HostExec e;
  Impl::activation_forward(e, f, alpha, x, y, n);
}
void HostDevice::activation_backward(Activation f, float alpha, const float* x, const float* y,
                                     const float* dy, float* dx, std::size_t n) {
  HostExec e;
  Impl::activation_backward(e, f, alpha, x, y, dy, dx, n);
}
void HostDevice::bias_add(const ChannelDims& d, const float* bias, float* y, Activation f,
                          float alpha) {
  HostExec e;
  Impl::bias_add(e, d, bias, y, f, alpha);
}
void HostDevice::bias_grad(const ChannelDims& d, const float* dy, float* dbias) {
  HostExec e;
  Impl::bias_grad(e, d, dy, dbias);
}
void HostDevice::softmax_forward(bool log, const ChannelDims& d, const float* x, float* y) {
  HostExec e;
  Impl::softmax_forward(e, log, d, x, y);
}
void HostDevice::softmax_backward(bool log, const ChannelDims& d, const float* y,
                                  const float* dy, float* dx) {
  HostExec e;
  Impl::softmax_backward(e, log, d, y, dy, dx);
}
void HostDevice::batch_norm_forward(const BatchNormArgs& a, const float* x, const float* gamma,
                                    const float* beta, float* running_mean, float* running_var,
                                    float* y, float* save_mean, float* save_invstd) {
  HostExec e;
  Impl::batch_norm_forward(e, a, x, gamma, beta, running_mean, running_var, y, save_mean,
                           save_invstd);
}
void HostDevice::batch_norm_backward(const BatchNormArgs& a, const float* x, const float* dy,
                                     const float* gamma, const float* save_mean,
                                     const float* save_invstd, float* dx, float* dgamma,
                                     float* dbeta) {
  HostExec e;
  Impl::batch_norm_backward(e, a, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta);
}
void HostDevice::layer_norm_forward(const LayerNormArgs& a, const float* x, const float* gamma,
                                    const float* beta, float* y, float* save_mean,
                                    float* save_rstd) {
  HostExec e;
  Impl::layer_norm_forward(e, a, x, gamma, beta, y, save_mean, save_rstd);
}
void HostDevice::layer_norm_backward(const LayerNormArgs& a, const float* x, const float* dy,
                                     const float* gamma, const float* save_mean,
                                     const float* save_rstd, float* dx, float* dgamma,
                                     float* dbeta) {
  HostExec e;
  Impl::layer_norm_backward(e, a, x, dy, gamma, save_mean, save_rstd, dx, dgamma, dbeta);
}
void HostDevice::dropout_forward(const DropoutArgs& a, const float* x, float* y, std::size_t n) {
  HostExec e;
  Impl::dropout(e, a, x, y, n);
}
void HostDevice::dropout_backward(const DropoutArgs& a, const float* dy, float* dx,
                                  std::size_t n) {
  HostExec e;
  Impl::dropout(e, a, dy, dx, n);
}
void HostDevice::nll_forward(const float* logp, const std::int64_t* target, std::size_t rows,
                             std::size_t classes, float* loss) {
  HostExec e;
  Impl::nll_forward(e, logp, target, rows, classes, loss);
}
void HostDevice::nll_backward(const std::int64_t* target, std::size_t rows, std::size_t classes,
                              float scale, float* dx) {
  HostExec e;
  Impl::nll_backward(e, target, rows, classes, scale, dx);
}
void HostDevice::cross_entropy_backward(const float* logp, const std::int64_t* target,
                                        std::size_t rows, std::size_t classes, float scale,
                                        float* dx) {
  HostExec e;
  Impl::cross_entropy_backward(e, logp, target, rows, classes, scale, dx);
}

}  // namespace cohort::host
