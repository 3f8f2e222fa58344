// Every op of the table (cohort/backend/op_list.hpp) implemented once over an executor. A backend
// supplies an Exec with three members and hands each call to run_call():
//
//   template <class F> void for_each(const char* label, i64 count, const F& f);
//       runs f(item) for item in [0, count) (host: Kokkos parallel_for; CUDA: one thread per item),
//       ordered after everything enqueued before it;
//   void gemm(const GemmArgs& g);            the device's own GEMM (oneDNN on the host, cuBLAS),
//                                            called with m, n, k >= 1;
//   float* scratch(std::size_t floats);      device memory for at least `floats` floats, valid
//                                            until the op returns (ops ask once per call).
//
// So the backends differ only in how they launch work; the loop structure (which functor over how
// many items, where the GEMMs go) and the math (kernels.hpp, layer_kernels.hpp, optim_kernels.hpp)
// are shared. A backend that runs an op through a vendor library instead (cuDNN, say) overloads
// run() for that call type in its own file and leaves the rest here.
//
// Convolution here is im2col + GEMM per image: what runs where the vendor library does not (the
// host device sends convolutions to oneDNN's primitives, host_conv.cpp, and the CUDA device to
// cuDNN; COHORT_HOST_CONV=im2col and the deterministic backward filter keep this path on the host).
// It is the layout PyTorch's own CPU fallback (slow_conv2d) uses:
// the column matrix of one image stays in cache (conv2 of the MNIST CNN: 288 x 576 floats, 660
// KB), the GEMMs write NCHW directly (no transposes), and bias + activation run on each image's
// output right after its GEMM, while it is still in cache. 1x1 convolutions with stride 1 and no
// padding skip im2col (the image already is its column matrix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"
#include "cohort/backend/op_list.hpp"
#include "common/kernels.hpp"
#include "common/layer_kernels.hpp"
#include "common/optim_kernels.hpp"

namespace cohort::kernels {


// The passes a vendor convolution (cuDNN, oneDNN) leaves to the shared kernels, over the whole
// batch: y = act(y + bias) (bias nullable; nothing to do for neither), and dbias += sum dy.
template <class Exec>
void conv2d_bias_act_pass(Exec& e, const Conv2dArgs& a, const float* bias, float* y) {
  if (!bias && a.act == Activation::identity) return;
  dispatch_activation(a.act, [&](auto tag) {
    e.for_each("cohort::conv2d_bias_act", a.n * a.k,
               BiasActPlane<decltype(tag)::value>{ChannelDims{a.n, a.k, a.oh * a.ow}, bias, y,
                                                  a.act_alpha});
  });
}
template <class Exec>
void conv2d_bias_grad_pass(Exec& e, const calls::Conv2dBackwardFilter& c) {
  const Conv2dArgs& a = c.a;
  if (c.dbias)
    e.for_each("cohort::bias_grad", a.k,
               BiasGradChannel{ChannelDims{a.n, a.k, a.oh * a.ow}, c.dy, c.dbias});
}

inline bool pointwise(const Conv2dArgs& a) {
    return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 &&
           a.pad_w == 0;
}

template <class Exec>
void run(Exec& e, const calls::Conv2dForward& c) {
    const Conv2dArgs& a = c.a;
    const float *x = c.x, *w = c.w, *bias = c.bias;
    float* y = c.y;
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

template <class Exec>
void run(Exec& e, const calls::Conv2dBackwardData& c) {
    const Conv2dArgs& a = c.a;
    const float *dy = c.dy, *w = c.w;
    float* dx = c.dx;
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

template <class Exec>
void run(Exec& e, const calls::Conv2dBackwardFilter& c) {
    const Conv2dArgs& a = c.a;
    const float *x = c.x, *dy = c.dy;
    float* dw = c.dw;
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
    conv2d_bias_grad_pass(e, c);
  }


template <class Exec>
void run(Exec& e, const calls::Pool2dForward& c) {
  e.for_each("cohort::pool2d_forward", c.a.n * c.a.c * c.a.oh, PoolForwardRow{c.a, c.x, c.y, c.argmax});
}
template <class Exec>
void run(Exec& e, const calls::Pool2dBackward& c) {
  e.for_each("cohort::pool2d_backward", c.a.n * c.a.c, PoolBackwardPlane{c.a, c.dy, c.argmax, c.dx});
}

template <class Exec>
void run(Exec& e, const calls::ActivationForward& c) {
  dispatch_activation(c.f, [&](auto tag) {
    e.for_each("cohort::activation_forward", static_cast<i64>(c.n),
               ActForward<decltype(tag)::value>{c.alpha, c.x, c.y});
  });
}
template <class Exec>
void run(Exec& e, const calls::ActivationBackward& c) {
  dispatch_activation(c.f, [&](auto tag) {
    e.for_each("cohort::activation_backward", static_cast<i64>(c.n),
               ActBackward<decltype(tag)::value>{c.alpha, c.x, c.y, c.dy, c.dx});
  });
}

template <class Exec>
void run(Exec& e, const calls::BiasAdd& c) {
  dispatch_activation(c.f, [&](auto tag) {
    if (c.d.inner == 1)
      e.for_each("cohort::bias_add", c.d.outer,
                 BiasActRow<decltype(tag)::value>{c.d, c.bias, c.y, c.alpha});
    else
      e.for_each("cohort::bias_add", c.d.outer * c.d.channels,
                 BiasActPlane<decltype(tag)::value>{c.d, c.bias, c.y, c.alpha});
  });
}
template <class Exec>
void run(Exec& e, const calls::BiasGrad& c) {
  if (c.d.inner == 1)
    e.for_each("cohort::bias_grad",
               (c.d.channels + BiasGradColumns::block - 1) / BiasGradColumns::block,
               BiasGradColumns{c.d, c.dy, c.dbias});
  else
    e.for_each("cohort::bias_grad", c.d.channels, BiasGradChannel{c.d, c.dy, c.dbias});
}

template <class Exec>
void run(Exec& e, const calls::SoftmaxForward& c) {
  e.for_each("cohort::softmax_forward", c.d.outer * c.d.inner, SoftmaxForward{c.d, c.log, c.x, c.y});
}
template <class Exec>
void run(Exec& e, const calls::SoftmaxBackward& c) {
  e.for_each("cohort::softmax_backward", c.d.outer * c.d.inner,
             SoftmaxBackward{c.d, c.log, c.y, c.dy, c.dx});
}

template <class Exec>
void run(Exec& e, const calls::BatchNormForward& c) {
  e.for_each("cohort::batch_norm_stats", c.a.c,
             BatchNormStats{c.a, c.x, c.running_mean, c.running_var, c.save_mean, c.save_invstd});
  e.for_each("cohort::batch_norm_apply", c.a.n * c.a.c,
             BatchNormApply{c.a, c.x, c.gamma, c.beta, c.save_mean, c.save_invstd, c.y});
}
template <class Exec>
void run(Exec& e, const calls::BatchNormBackward& c) {
  e.for_each("cohort::batch_norm_backward", c.a.c,
             BatchNormBackward{c.a, c.x, c.dy, c.gamma, c.save_mean, c.save_invstd, c.dx, c.dgamma,
                               c.dbeta});
}

template <class Exec>
void run(Exec& e, const calls::LayerNormForward& c) {
  e.for_each("cohort::layer_norm_forward", c.a.rows,
             LayerNormForwardRow{c.a, c.x, c.gamma, c.beta, c.y, c.save_mean, c.save_rstd});
}
template <class Exec>
void run(Exec& e, const calls::LayerNormBackward& c) {
  if (c.dx)
    e.for_each("cohort::layer_norm_backward", c.a.rows,
               LayerNormBackwardRow{c.a, c.x, c.dy, c.gamma, c.save_mean, c.save_rstd, c.dx});
  if (c.dgamma || c.dbeta)
    e.for_each("cohort::layer_norm_param_grad",
               (c.a.cols + LayerNormParamGradCols::block - 1) / LayerNormParamGradCols::block,
               LayerNormParamGradCols{c.a, c.x, c.dy, c.save_mean, c.save_rstd, c.dgamma,
                                      c.dbeta});
}

template <class Exec>
void run(Exec& e, const calls::Permute& c) {
  const PermuteArgs& a = c.a;
  PermuteChunk f{};
  f.rank = a.rank;
  i64 in_stride[PermuteArgs::max_rank];
  i64 stride = 1;
  for (int k = a.rank - 1; k >= 0; --k) {  // x is contiguous in its own axis order
    in_stride[k] = stride;
    stride *= a.dims[k];
  }
  for (int k = 0; k < a.rank; ++k) {
    f.out_dims[k] = a.dims[a.perm[k]];
    f.in_stride[k] = in_stride[a.perm[k]];
  }
  const i64 cols = f.out_dims[a.rank - 1];
  if (stride == 0 || cols == 0) return;
  f.chunks_per_row = (cols + PermuteChunk::chunk - 1) / PermuteChunk::chunk;
  f.x = c.x;
  f.out = c.out;
  e.for_each("cohort::permute", stride / cols * f.chunks_per_row, f);
}
template <class Exec>
void run(Exec& e, const calls::SliceCopy& c) {
  e.for_each("cohort::slice_copy", c.a.outer * c.a.length, SliceCopyRow{c.a, c.src, c.dst});
}

template <class Exec>
void dropout(Exec& e, const DropoutArgs& a, const float* in, float* out, std::size_t n) {
  const i64 count = static_cast<i64>(n);
  e.for_each("cohort::dropout", DropoutBlocks::items(count), DropoutBlocks{a, count, in, out});
}
template <class Exec>
void run(Exec& e, const calls::DropoutForward& c) {
  dropout(e, c.a, c.x, c.y, c.n);
}
template <class Exec>
void run(Exec& e, const calls::DropoutBackward& c) {
  dropout(e, c.a, c.dy, c.dx, c.n);
}

template <class Exec>
void run(Exec& e, const calls::NllForward& c) {
  e.for_each("cohort::nll_forward", static_cast<i64>(c.rows),
             NllForwardRow{c.logp, c.target, static_cast<i64>(c.classes), c.loss});
}
template <class Exec>
void run(Exec& e, const calls::NllBackward& c) {
  e.for_each("cohort::nll_backward", static_cast<i64>(c.rows),
             NllBackwardRow{c.target, static_cast<i64>(c.classes), c.scale, c.dx});
}
template <class Exec>
void run(Exec& e, const calls::CrossEntropyBackward& c) {
  e.for_each("cohort::cross_entropy_backward", static_cast<i64>(c.rows),
             CrossEntropyBackwardRow{c.logp, c.target, static_cast<i64>(c.classes), c.scale, c.dx});
}

// ---------------------------------------------------------------------------------------------
// Tensor ops.

// Calls fn(v) with the fill value converted to the element type of c.dtype (bf16, f16: its bits as
// std::uint16_t). The conversion happens here, on the host, exactly once for every backend and for
// the Thrust path (thrust_ops.hpp).
template <class Fn>
void with_fill_value(const calls::Fill& c, Fn&& fn) {
  switch (c.dtype) {
    case DType::f32: return fn(static_cast<float>(c.value));
    case DType::f64: return fn(c.value);
    case DType::bf16: return fn(float_to_bf16(static_cast<float>(c.value)));
    case DType::f16: return fn(float_to_f16(static_cast<float>(c.value)));
    case DType::i32: return fn(static_cast<std::int32_t>(c.value));
    case DType::i64: return fn(static_cast<std::int64_t>(c.value));
    case DType::u8: return fn(static_cast<std::uint8_t>(c.value));
  }
}
// Calls fn(S{}, D{}) with the cast op's element types (kernels.hpp: CastF32, ...). The front end
// (ops::cast) admits only these four dtypes.
template <class Fn>
void with_cast_types(const calls::Cast& c, Fn&& fn) {
  auto with = [&](DType d, auto&& next) {
    switch (d) {
      case DType::f32: return next(CastF32{});
      case DType::f64: return next(CastF64{});
      case DType::bf16: return next(CastBf16{});
      case DType::f16: return next(CastF16{});
      default: COHORT_FAIL("cast: unsupported dtype ", dtype_name(d));
    }
  };
  with(c.src_dtype, [&](auto s) { with(c.dst_dtype, [&](auto d) { fn(s, d); }); });
}
template <class Exec>
void run(Exec& e, const calls::Cast& c) {
  with_cast_types(c, [&](auto s, auto d) {
    using S = decltype(s);
    using D = decltype(d);
    e.for_each("cohort::cast", static_cast<i64>(c.n),
               CastItem<S, D>{static_cast<const typename S::T*>(c.src),
                              static_cast<typename D::T*>(c.dst)});
  });
}
template <class Exec>
void run(Exec& e, const calls::Fill& c) {
  with_fill_value(c, [&](auto v) {
    using T = decltype(v);
    e.for_each("cohort::fill", static_cast<i64>(c.n), FillItem<T>{static_cast<T*>(c.x), v});
  });
}
template <class Exec>
void run(Exec& e, const calls::Add& c) {
  e.for_each("cohort::add", static_cast<i64>(c.n), Map2Item<Add>{Add{}, c.a, c.b, c.out});
}
template <class Exec>
void run(Exec& e, const calls::Sub& c) {
  e.for_each("cohort::sub", static_cast<i64>(c.n), Map2Item<Sub>{Sub{}, c.a, c.b, c.out});
}
template <class Exec>
void run(Exec& e, const calls::Mul& c) {
  e.for_each("cohort::mul", static_cast<i64>(c.n), Map2Item<Mul>{Mul{}, c.a, c.b, c.out});
}
template <class Exec>
void run(Exec& e, const calls::Axpy& c) {
  e.for_each("cohort::axpy", static_cast<i64>(c.n), Map2Item<Axpy>{Axpy{c.alpha}, c.x, c.y, c.y});
}
template <class Exec>
void run(Exec& e, const calls::Scale& c) {
  e.for_each("cohort::scale", static_cast<i64>(c.n), Map1Item<Scale>{Scale{c.alpha}, c.x, c.out});
}
template <class Exec>
void run(Exec& e, const calls::ReduceSum& c) {
  e.for_each("cohort::reduce_sum", static_cast<i64>(c.rows),
             RowSumItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Exec>
void run(Exec& e, const calls::ReduceMax& c) {
  e.for_each("cohort::reduce_max", static_cast<i64>(c.rows),
             RowMaxItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Exec>
void run(Exec& e, const calls::Argmax& c) {
  e.for_each("cohort::argmax", static_cast<i64>(c.rows),
             RowArgmaxItem{c.x, static_cast<i64>(c.cols), c.out});
}
template <class Exec>
void run(Exec& e, const calls::Gemm& c) {
  if (c.m == 0 || c.n == 0) return;
  if (c.k == 0) {  // op(A) op(B) is all zeros: C = beta C, with beta == 0 overwriting NaN
    e.for_each("cohort::gemm_k0", c.m, ScaleRowItem{c.c, c.n, c.ldc, c.beta});
    return;
  }
  e.gemm(c);
}
// One GEMM per batch entry through the device's own GEMM; a backend with a batched GEMM (cuBLAS)
// overloads this.
template <class Exec>
void run(Exec& e, const calls::GemmBatched& c) {
  for (i64 i = 0; i < c.batch; ++i) {
    calls::Gemm g;
    static_cast<GemmArgs&>(g) = c;
    g.a = c.a + i * c.stride_a;
    g.b = c.b + i * c.stride_b;
    g.c = c.c + i * c.stride_c;
    run(e, g);
  }
}
template <class Exec>
void run(Exec& e, const calls::FillUniform& c) {
  e.for_each("cohort::fill_uniform", static_cast<i64>(c.n),
             GenerateItem<UniformAt>{UniformAt{c.seed, c.lo, c.hi}, c.x, c.offset});
}
template <class Exec>
void run(Exec& e, const calls::FillNormal& c) {
  e.for_each("cohort::fill_normal", static_cast<i64>(c.n),
             GenerateItem<NormalAt>{NormalAt{c.seed, c.mean, c.stddev}, c.x, c.offset});
}

// ---------------------------------------------------------------------------------------------
// Optimizer ops: one fused update per element.

template <class Exec>
void run(Exec& e, const calls::SgdStep& c) {
  e.for_each("cohort::sgd_step", static_cast<i64>(c.n),
             SgdUpdate{c.a, c.param, c.grad, c.momentum_buffer});
}
template <class Exec>
void run(Exec& e, const calls::AdamStep& c) {
  visit_adam(c.a, c.param, c.grad, c.exp_avg, c.exp_avg_sq, c.max_exp_avg_sq,
             [&](const auto& update) {
               e.for_each("cohort::adam_step", static_cast<i64>(c.n), update);
             });
}
template <class Exec>
void run(Exec& e, const calls::AdadeltaStep& c) {
  visit_adadelta(c.a, c.param, c.grad, c.square_avg, c.acc_delta, [&](const auto& update) {
    e.for_each("cohort::adadelta_step", static_cast<i64>(c.n), update);
  });
}
template <class Exec>
void run(Exec& e, const calls::RmspropStep& c) {
  e.for_each("cohort::rmsprop_step", static_cast<i64>(c.n),
             RmspropUpdate{c.a, c.param, c.grad, c.square_avg, c.grad_avg, c.momentum_buffer});
}

// Every call through the shared implementation: what a backend's Device::run does unless it
// overloads run() for a call type of its own before including nothing else.
template <class Exec>
void run_call(Exec& e, const OpCall& call) {
  std::visit([&](const auto& c) { run(e, c); }, call);
}

// The cases the shared implementation covers: all of them (its operands are f32 by construction,
// Fill takes every dtype). A backend with gaps says so in its own supports().
inline bool shared_supports(const OpCall&) { return true; }

}  // namespace cohort::kernels
