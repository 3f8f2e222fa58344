// The layer ops of the device table, implemented once over an executor. Each backend supplies an
// Exec with three members and forwards its Device overrides here:
//
//   template <class F> void for_each(const char* label, i64 count, const F& f);
//       runs f(item) for item in [0, count) (host: Kokkos parallel_for; CUDA: one thread per item),
//       ordered after everything enqueued before it;
//   void gemm(const GemmArgs& g);            the device's own GEMM (oneDNN on the host, cuBLAS);
//   float* scratch(std::size_t floats);      device memory for at least `floats` floats, valid
//                                            until the op returns (ops ask once per call).
//
// So the backends differ only in how they launch work; the loop structure (which functor over how
// many items, where the GEMMs go) and the math (cohort/detail/layer_kernels.hpp) are shared.
//
// Convolution is im2col + GEMM per image, the layout PyTorch's own CPU fallback (slow_conv2d) uses:
// the column matrix of one image stays in cache (conv2 of the MNIST CNN: 288 x 576 floats, 660
// KB), the GEMMs write NCHW directly (no transposes), and bias + activation run on each image's
// output right after its GEMM, while it is still in cache. 1x1 convolutions with stride 1 and no
// padding skip im2col (the image already is its column matrix).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/core/device.hpp"
#include "cohort/core/layer_args.hpp"
#include "cohort/detail/layer_kernels.hpp"

namespace cohort::kernels {

template <class Exec>
struct LayerImpl {
  static bool pointwise(const Conv2dArgs& a) {
    return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 &&
           a.pad_w == 0;
  }

  static void conv2d_forward(Exec& e, const Conv2dArgs& a, const float* x, const float* w,
                             const float* bias, float* y) {
    const i64 kg = a.k / a.groups, crs = (a.c / a.groups) * a.r * a.s, ohw = a.oh * a.ow;
    const bool direct = pointwise(a);
    float* col = direct ? nullptr : e.scratch(static_cast<std::size_t>(a.c * a.r * a.s * ohw));
    for (i64 b = 0; b < a.n; ++b) {
      const float* xb = x + b * a.c * a.h * a.w;
      float* yb = y + b * a.k * ohw;
      if (!direct) e.for_each("cohort::im2col", a.c * a.r * a.s, Im2colRow{a, xb, col});
      const float* cb = direct ? xb : col;
      for (i64 g = 0; g < a.groups; ++g) {
        GemmArgs ga;  // y_g [kg, ohw] = W_g [kg, crs] col_g [crs, ohw]
        ga.m = kg;
        ga.n = ohw;
        ga.k = crs;
        ga.a = w + g * kg * crs;
        ga.lda = crs;
        ga.b = cb + g * crs * ohw;
        ga.ldb = ohw;
        ga.beta = 0.0f;
        ga.c = yb + g * kg * ohw;
        ga.ldc = ohw;
        e.gemm(ga);
      }
      if (bias || a.act != Activation::identity)
        dispatch_activation(a.act, [&](auto tag) {
          e.for_each("cohort::conv2d_bias_act", a.k,
                     BiasActPlane<decltype(tag)::value>{ChannelDims{1, a.k, ohw}, bias, yb,
                                                        a.act_alpha});
        });
    }
  }

  static void conv2d_backward_data(Exec& e, const Conv2dArgs& a, const float* dy, const float* w,
                                   float* dx) {
    const i64 kg = a.k / a.groups, cg = a.c / a.groups, crs = cg * a.r * a.s, ohw = a.oh * a.ow;
    const bool direct = pointwise(a);
    float* col = direct ? nullptr : e.scratch(static_cast<std::size_t>(a.c * a.r * a.s * ohw));
    for (i64 b = 0; b < a.n; ++b) {
      const float* dyb = dy + b * a.k * ohw;
      float* dxb = dx + b * a.c * a.h * a.w;
      for (i64 g = 0; g < a.groups; ++g) {
        GemmArgs ga;  // col_g [crs, ohw] = W_g^T [crs, kg] dy_g [kg, ohw]
        ga.trans_a = true;
        ga.m = crs;
        ga.n = ohw;
        ga.k = kg;
        ga.a = w + g * kg * crs;
        ga.lda = crs;
        ga.b = dyb + g * kg * ohw;
        ga.ldb = ohw;
        ga.beta = 0.0f;
        ga.c = direct ? dxb + g * cg * a.h * a.w : col + g * crs * ohw;
        ga.ldc = ohw;
        e.gemm(ga);
      }
      if (!direct) e.for_each("cohort::col2im", a.c * a.h, Col2imRow{a, col, dxb});
    }
  }

  static void conv2d_backward_filter(Exec& e, const Conv2dArgs& a, const float* x,
                                     const float* dy, float* dw, float* dbias) {
    const i64 kg = a.k / a.groups, crs = (a.c / a.groups) * a.r * a.s, ohw = a.oh * a.ow;
    const bool direct = pointwise(a);
    float* col = direct ? nullptr : e.scratch(static_cast<std::size_t>(a.c * a.r * a.s * ohw));
    for (i64 b = 0; b < a.n; ++b) {
      const float* xb = x + b * a.c * a.h * a.w;
      const float* dyb = dy + b * a.k * ohw;
      if (!direct) e.for_each("cohort::im2col", a.c * a.r * a.s, Im2colRow{a, xb, col});
      const float* cb = direct ? xb : col;
      for (i64 g = 0; g < a.groups; ++g) {
        GemmArgs ga;  // dW_g [kg, crs] += dy_g [kg, ohw] col_g^T [ohw, crs]
        ga.trans_b = true;
        ga.m = kg;
        ga.n = crs;
        ga.k = ohw;
        ga.a = dyb + g * kg * ohw;
        ga.lda = ohw;
        ga.b = cb + g * crs * ohw;
        ga.ldb = ohw;
        ga.beta = 1.0f;
        ga.c = dw + g * kg * crs;
        ga.ldc = crs;
        e.gemm(ga);
      }
    }
    if (dbias)
      e.for_each("cohort::bias_grad", a.k, BiasGradChannel{ChannelDims{a.n, a.k, ohw}, dy, dbias});
  }

  static void pool2d_forward(Exec& e, const Pool2dArgs& a, const float* x, float* y,
                             std::int32_t* argmax) {
    e.for_each("cohort::pool2d_forward", a.n * a.c * a.oh, PoolForwardRow{a, x, y, argmax});
  }
  static void pool2d_backward(Exec& e, const Pool2dArgs& a, const float* dy,
                              const std::int32_t* argmax, float* dx) {
    e.for_each("cohort::pool2d_backward", a.n * a.c, PoolBackwardPlane{a, dy, argmax, dx});
  }

  static void activation_forward(Exec& e, Activation f, float alpha, const float* x, float* y,
                                 std::size_t n) {
    dispatch_activation(f, [&](auto tag) {
      e.for_each("cohort::activation_forward", static_cast<i64>(n),
                 ActForward<decltype(tag)::value>{alpha, x, y});
    });
  }
  static void activation_backward(Exec& e, Activation f, float alpha, const float* x,
                                  const float* y, const float* dy, float* dx, std::size_t n) {
    dispatch_activation(f, [&](auto tag) {
      e.for_each("cohort::activation_backward", static_cast<i64>(n),
                 ActBackward<decltype(tag)::value>{alpha, x, y, dy, dx});
    });
  }

  static void bias_add(Exec& e, const ChannelDims& d, const float* bias, float* y, Activation f,
                       float alpha) {
    dispatch_activation(f, [&](auto tag) {
      e.for_each("cohort::bias_add", d.outer * d.channels,
                 BiasActPlane<decltype(tag)::value>{d, bias, y, alpha});
    });
  }
  static void bias_grad(Exec& e, const ChannelDims& d, const float* dy, float* dbias) {
    e.for_each("cohort::bias_grad", d.channels, BiasGradChannel{d, dy, dbias});
  }

  static void softmax_forward(Exec& e, bool log, const ChannelDims& d, const float* x, float* y) {
    e.for_each("cohort::softmax_forward", d.outer * d.inner, SoftmaxForward{d, log, x, y});
  }
  static void softmax_backward(Exec& e, bool log, const ChannelDims& d, const float* y,
                               const float* dy, float* dx) {
    e.for_each("cohort::softmax_backward", d.outer * d.inner, SoftmaxBackward{d, log, y, dy, dx});
  }

  static void batch_norm_forward(Exec& e, const BatchNormArgs& a, const float* x,
                                 const float* gamma, const float* beta, float* running_mean,
                                 float* running_var, float* y, float* save_mean,
                                 float* save_invstd) {
    e.for_each("cohort::batch_norm_stats", a.c,
               BatchNormStats{a, x, running_mean, running_var, save_mean, save_invstd});
    e.for_each("cohort::batch_norm_apply", a.n * a.c,
               BatchNormApply{a, x, gamma, beta, save_mean, save_invstd, y});
  }
  static void batch_norm_backward(Exec& e, const BatchNormArgs& a, const float* x,
                                  const float* dy, const float* gamma, const float* save_mean,
                                  const float* save_invstd, float* dx, float* dgamma,
                                  float* dbeta) {
    e.for_each("cohort::batch_norm_backward", a.c,
               BatchNormBackward{a, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta});
  }

  static void layer_norm_forward(Exec& e, const LayerNormArgs& a, const float* x,
                                 const float* gamma, const float* beta, float* y,
                                 float* save_mean, float* save_rstd) {
    e.for_each("cohort::layer_norm_forward", a.rows,
               LayerNormForwardRow{a, x, gamma, beta, y, save_mean, save_rstd});
  }
  static void layer_norm_backward(Exec& e, const LayerNormArgs& a, const float* x,
                                  const float* dy, const float* gamma, const float* save_mean,
                                  const float* save_rstd, float* dx, float* dgamma,
                                  float* dbeta) {
    if (dx)
      e.for_each("cohort::layer_norm_backward", a.rows,
                 LayerNormBackwardRow{a, x, dy, gamma, save_mean, save_rstd, dx});
    if (dgamma || dbeta)
      e.for_each("cohort::layer_norm_param_grad", a.cols,
                 LayerNormParamGradCol{a, x, dy, save_mean, save_rstd, dgamma, dbeta});
  }

  static void dropout(Exec& e, const DropoutArgs& a, const float* in, float* out, std::size_t n) {
    const i64 count = static_cast<i64>(n);
    constexpr i64 per_item = DropoutBlocks::kBlocks * 4;
    e.for_each("cohort::dropout", (count + per_item - 1) / per_item,
               DropoutBlocks{a, count, in, out});
  }

  static void nll_forward(Exec& e, const float* logp, const std::int64_t* target,
                          std::size_t rows, std::size_t classes, float* loss) {
    e.for_each("cohort::nll_forward", static_cast<i64>(rows),
               NllForwardRow{logp, target, static_cast<i64>(classes), loss});
  }
  static void nll_backward(Exec& e, const std::int64_t* target, std::size_t rows,
                           std::size_t classes, float scale, float* dx) {
    e.for_each("cohort::nll_backward", static_cast<i64>(rows),
               NllBackwardRow{target, static_cast<i64>(classes), scale, dx});
  }
  static void cross_entropy_backward(Exec& e, const float* logp, const std::int64_t* target,
                                     std::size_t rows, std::size_t classes, float scale,
                                     float* dx) {
    e.for_each("cohort::cross_entropy_backward", static_cast<i64>(rows),
               CrossEntropyBackwardRow{logp, target, static_cast<i64>(classes), scale, dx});
  }
};

}  // namespace cohort::kernels
