// Convolution family: conv2d_forward, conv2d_backward_data, conv2d_backward_filter as im2col +
// GEMM per image, what runs where the vendor library does not (the host sends convolutions to
// oneDNN, backends/host/conv2d.cpp; CUDA to cuDNN, backends/cuda/conv2d.cpp;
// COHORT_HOST_CONV=im2col and the deterministic backward filter keep this path on the host). It is
// the layout PyTorch's own CPU fallback (slow_conv2d) uses: the column matrix of one image stays in
// cache (conv2 of the MNIST CNN: 288 x 576 floats, 660 KB), the GEMMs write NCHW directly (no
// transposes), and bias + activation run on each image's output right after its GEMM, while it is
// still in cache. 1x1 convolutions with stride 1 and no padding skip im2col (the image already is
// its column matrix).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/activation.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

// ---------------------------------------------------------------------------------------------
// Convolution as GEMM. For one image, col is the [c*r*s, oh*ow] matrix whose row (ci, p, q) holds
// the input pixels that kernel tap (p, q) of channel ci meets at every output position, 0 where
// the tap falls in the padding. Then y_g = W_g col_g per group (one GEMM), dW_g += dy_g col_g^T,
// and col_g = W_g^T dy_g followed by col2im gives dx.

struct Im2colRow {  // item: one row (ci, p, q) of col, all oh * ow outputs: items = c * r * s
  Conv2dArgs a;
  const float* x;  // one image [c, h, w]
  float* col;      // [c * r * s, oh * ow]
  i64 cost() const { return a.oh * a.ow; }
  COHORT_HD void operator()(i64 row) const {
    const i64 q = row % a.s;
    const i64 p = (row / a.s) % a.r;
    const i64 ci = row / (a.s * a.r);
    const float* img = x + ci * a.h * a.w;
    const i64 off = q * a.dil_w - a.pad_w;  // input column of output column j: j * stride_w + off
    i64 lo, hi;
    valid_range(off, a.stride_w, a.w, a.ow, lo, hi);
    float* out = col + row * (a.oh * a.ow);
    for (i64 oh = 0; oh < a.oh; ++oh, out += a.ow) {
      const i64 ih = oh * a.stride_h - a.pad_h + p * a.dil_h;
      if (ih < 0 || ih >= a.h) {
        for (i64 j = 0; j < a.ow; ++j) out[j] = 0.0f;
        continue;
      }
      const float* in = img + ih * a.w;
      for (i64 j = 0; j < lo; ++j) out[j] = 0.0f;
      if (a.stride_w == 1) {
        for (i64 j = lo; j < hi; ++j) out[j] = in[j + off];
      } else {
        for (i64 j = lo; j < hi; ++j) out[j] = in[j * a.stride_w + off];
      }
      for (i64 j = hi; j < a.ow; ++j) out[j] = 0.0f;
    }
  }
};

struct Col2imRow {  // item: one input row (ci, ih) of dx, summed over every tap that read it
  Conv2dArgs a;
  const float* col;  // [c * r * s, oh * ow]
  float* dx;         // one image [c, h, w]
  i64 cost() const { return a.r * a.s * a.w; }
  COHORT_HD void operator()(i64 item) const {
    const i64 ih = item % a.h;
    const i64 ci = item / a.h;
    float* out = dx + (ci * a.h + ih) * a.w;
    for (i64 j = 0; j < a.w; ++j) out[j] = 0.0f;
    for (i64 p = 0; p < a.r; ++p) {
      const i64 t = ih + a.pad_h - p * a.dil_h;  // = oh * stride_h for the output row that used it
      if (t < 0 || t % a.stride_h != 0) continue;
      const i64 oh = t / a.stride_h;
      if (oh >= a.oh) continue;
      for (i64 q = 0; q < a.s; ++q) {
        const float* src = col + ((ci * a.r + p) * a.s + q) * (a.oh * a.ow) + oh * a.ow;
        const i64 off = q * a.dil_w - a.pad_w;
        i64 lo, hi;
        valid_range(off, a.stride_w, a.w, a.ow, lo, hi);
        if (a.stride_w == 1) {
          for (i64 j = lo; j < hi; ++j) out[j + off] += src[j];
        } else {
          for (i64 j = lo; j < hi; ++j) out[j * a.stride_w + off] += src[j];
        }
      }
    }
  }
};

// The passes a vendor convolution (cuDNN, oneDNN) leaves to the shared kernels, over the whole
// batch: y = act(y + bias) (bias nullable; nothing to do for neither), which is bias_add's call, so
// a backend's own bias_add (the host's per-CPU loops) serves it too; and dbias += sum dy.
template <class Exec>
void conv2d_bias_act_pass(Exec& e, const Conv2dArgs& a, const float* bias, float* y) {
  if (!bias && a.act == Activation::identity) return;
  run(e, calls::BiasAdd{ChannelDims{a.n, a.k, a.oh * a.ow}, bias, y, a.act, a.act_alpha});
}
template <class Exec>
void conv2d_bias_grad_pass(Exec& e, const calls::Conv2dBackwardFilter& c) {
  const Conv2dArgs& a = c.a;
  if (c.dbias)
    e.for_each("cohort::bias_grad", a.k,
               BiasGradChannel{ChannelDims{a.n, a.k, a.oh * a.ow}, c.dy, c.dbias});
}

inline bool pointwise(const Conv2dArgs& a) {
  return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
}

// The loop the three directions share: for each image b, `per_image(b, col)` with col the
// image's column matrix (nullptr when the convolution is pointwise: the image is its own), then
// one GEMM per group from `group_gemm(b, g, col)`. `col` is scratch for one image, asked once.
template <class Exec, class PerImage, class GroupGemm, class AfterImage>
void for_each_image_group(Exec& e, const Conv2dArgs& a, PerImage per_image, GroupGemm group_gemm,
                          AfterImage after_image) {
  const i64 ohw = a.oh * a.ow;
  float* col = pointwise(a) ? nullptr : e.scratch(static_cast<std::size_t>(a.c * a.r * a.s * ohw));
  for (i64 b = 0; b < a.n; ++b) {
    per_image(b, col);
    for (i64 g = 0; g < a.groups; ++g) e.gemm(group_gemm(b, g, col));
    after_image(b, col);
  }
}

// Row-major GEMM arguments c [m, n] = alpha op(a) op(b) + beta c, leading dimensions as given.
inline GemmArgs conv_gemm(bool trans_a, bool trans_b, i64 m, i64 n, i64 k, const float* a, i64 lda,
                          const float* b, i64 ldb, float beta, float* c, i64 ldc) {
  GemmArgs ga;
  ga.trans_a = trans_a;
  ga.trans_b = trans_b;
  ga.m = m;
  ga.n = n;
  ga.k = k;
  ga.a = a;
  ga.lda = lda;
  ga.b = b;
  ga.ldb = ldb;
  ga.beta = beta;
  ga.c = c;
  ga.ldc = ldc;
  return ga;
}

// The per-image step of the directions that read x: image b's column matrix (nothing when the
// convolution is pointwise and col is null).
template <class Exec>
auto im2col_of(Exec& e, const Conv2dArgs& a, const float* x) {
  return [&e, &a, x](i64 b, float* col) {
    if (col)
      e.for_each("cohort::im2col", a.c * a.r * a.s, Im2colRow{a, x + b * a.c * a.h * a.w, col});
  };
}

template <class Exec>
void run(Exec& e, const calls::Conv2dForward& c) {
  const Conv2dArgs& a = c.a;
  const i64 kg = a.k / a.groups, crs = (a.c / a.groups) * a.r * a.s, ohw = a.oh * a.ow;
  const auto image = [&](i64 b) { return c.x + b * a.c * a.h * a.w; };
  for_each_image_group(
      e, a, im2col_of(e, a, c.x),
      [&](i64 b, i64 g, const float* col) {  // y_g [kg, ohw] = W_g [kg, crs] col_g [crs, ohw]
        const float* cb = col ? col : image(b);
        return conv_gemm(false, false, kg, ohw, crs, c.w + g * kg * crs, crs, cb + g * crs * ohw,
                         ohw, 0.0f, c.y + b * a.k * ohw + g * kg * ohw, ohw);
      },
      [&](i64 b, float*) {  // bias + activation while the image's output is in cache
        if (c.bias || a.act != Activation::identity)
          with_activation(a.act, [&](auto tag) {
            constexpr Activation F = decltype(tag)::value;
            const ChannelDims d{1, a.k, ohw};
            float* y = c.y + b * a.k * ohw;
            if constexpr (has_fine_items_v<Exec>)
              e.for_each("cohort::conv2d_bias_act", a.k * ohw,
                         BiasActElement<F>{d, c.bias, y, a.act_alpha});
            else
              e.for_each("cohort::conv2d_bias_act", a.k,
                         BiasActPlane<F>{d, c.bias, y, a.act_alpha});
          });
      });
}

template <class Exec>
void run(Exec& e, const calls::Conv2dBackwardData& c) {
  const Conv2dArgs& a = c.a;
  const i64 kg = a.k / a.groups, cg = a.c / a.groups, crs = cg * a.r * a.s, ohw = a.oh * a.ow;
  const auto dx_image = [&](i64 b) { return c.dx + b * a.c * a.h * a.w; };
  for_each_image_group(
      e, a, [](i64, float*) {},
      [&](i64 b, i64 g, float* col) {  // col_g [crs, ohw] = W_g^T [crs, kg] dy_g [kg, ohw]
        float* out = col ? col + g * crs * ohw : dx_image(b) + g * cg * a.h * a.w;
        return conv_gemm(true, false, crs, ohw, kg, c.w + g * kg * crs, crs,
                         c.dy + b * a.k * ohw + g * kg * ohw, ohw, 0.0f, out, ohw);
      },
      [&](i64 b, float* col) {
        if (col) e.for_each("cohort::col2im", a.c * a.h, Col2imRow{a, col, dx_image(b)});
      });
}

template <class Exec>
void run(Exec& e, const calls::Conv2dBackwardFilter& c) {
  const Conv2dArgs& a = c.a;
  const i64 kg = a.k / a.groups, crs = (a.c / a.groups) * a.r * a.s, ohw = a.oh * a.ow;
  const auto image = [&](i64 b) { return c.x + b * a.c * a.h * a.w; };
  for_each_image_group(
      e, a, im2col_of(e, a, c.x),
      [&](i64 b, i64 g, const float* col) {  // dW_g [kg, crs] += dy_g [kg, ohw] col_g^T [ohw, crs]
        const float* cb = col ? col : image(b);
        return conv_gemm(false, true, kg, crs, ohw, c.dy + b * a.k * ohw + g * kg * ohw, ohw,
                         cb + g * crs * ohw, ohw, 1.0f, c.dw + g * kg * crs, crs);
      },
      [](i64, float*) {});
  conv2d_bias_grad_pass(e, c);
}

}  // namespace cohort::kernels
