// Plain-value seam of cuDNN's convolution calls (see cudnn_conv.hpp). One function builds the
// shape part for every direction; each direction only adds its blend, so the three calls cannot
// disagree about a descriptor.
#include "cuda/seams/cudnn_conv.hpp"

#include <climits>
#include <cstdint>
#include <initializer_list>

#include "cohort/core/error.hpp"

namespace cohort::cuda::seams {
namespace {

using i64 = std::int64_t;

int to_int(i64 v) { return static_cast<int>(v); }

ConvValues shape_values(const Conv2dArgs& a) {
  COHORT_CHECK_IN("cuda", a.groups >= 1 && a.c % a.groups == 0 && a.k % a.groups == 0,
                  "conv args: groups ", a.groups, " must divide c ", a.c, " and k ", a.k);
  COHORT_CHECK_IN("cuda", a.stride_h >= 1 && a.stride_w >= 1 && a.dil_h >= 1 && a.dil_w >= 1 &&
                              a.pad_h >= 0 && a.pad_w >= 0,
                  "conv args: stride ", a.stride_h, "x", a.stride_w, ", dilation ", a.dil_h, "x",
                  a.dil_w, " must be >= 1 and pad ", a.pad_h, "x", a.pad_w, " >= 0");
  COHORT_CHECK_IN("cuda",
                  a.oh == conv_out_size(a.h, a.r, a.stride_h, a.pad_h, a.dil_h) &&
                      a.ow == conv_out_size(a.w, a.s, a.stride_w, a.pad_w, a.dil_w),
                  "conv args: oh x ow ", a.oh, "x", a.ow, " is not the output of h x w ", a.h, "x",
                  a.w, " under its window");
  ConvValues v;
  const i64 cg = a.c / a.groups;
  v.covered = fits_int({a.n, a.c, a.h, a.w, a.k, a.r, a.s, a.oh, a.ow, a.stride_h, a.stride_w,
                        a.dil_h, a.dil_w, a.groups, a.n * a.c * a.h * a.w,
                        a.n * a.k * a.oh * a.ow, a.k * cg * a.r * a.s}) &&
                fits_int({a.pad_h + 1, a.pad_w + 1});  // pads may be 0
  if (!v.covered) return v;
  v.x = {to_int(a.n), to_int(a.c), to_int(a.h), to_int(a.w)};
  v.w = {to_int(a.k), to_int(cg), to_int(a.r), to_int(a.s)};
  v.y = {to_int(a.n), to_int(a.k), to_int(a.oh), to_int(a.ow)};
  v.pad_h = to_int(a.pad_h);
  v.pad_w = to_int(a.pad_w);
  v.stride_h = to_int(a.stride_h);
  v.stride_w = to_int(a.stride_w);
  v.dil_h = to_int(a.dil_h);
  v.dil_w = to_int(a.dil_w);
  v.groups = to_int(a.groups);
  v.mode = cudnn_enum::kCrossCorrelation;  // PyTorch's Conv2d
  v.compute_type = cudnn_enum::kDataFloat;  // f32 accumulation, also under autocast
  switch (a.compute) {
    case DType::f32:
      v.data_type = cudnn_enum::kDataFloat;
      break;
    case DType::bf16:
      v.data_type = cudnn_enum::kDataBfloat16;
      break;
    case DType::f16:
      v.data_type = cudnn_enum::kDataHalf;
      break;
    default:
      COHORT_CHECK_IN("cuda", false, "conv args: compute type ", dtype_name(a.compute),
                      " is not f32, bf16 or f16");
  }
  v.lowp = a.compute != DType::f32;
  return v;
}

}  // namespace

ConvValues conv_values(const calls::Conv2dForward& c) {
  ConvValues v = shape_values(c.a);
  v.alpha = 1.0f;
  v.beta = 0.0f;  // y is overwritten
  if (v.covered && !v.lowp && c.bias && c.a.act == Activation::relu) {
    v.fused_bias_act = true;
    v.bias = {1, v.y.c, 1, 1};
    v.act_mode = cudnn_enum::kActivationRelu;
    v.act_nan = cudnn_enum::kPropagateNan;
    v.alpha2 = 0.0f;
  }  // else bias and activation are the caller's pass
  return v;
}

ConvValues conv_values(const calls::Conv2dBackwardData& c) {
  ConvValues v = shape_values(c.a);
  v.alpha = 1.0f;
  v.beta = 0.0f;  // dx is overwritten
  return v;
}

ConvValues conv_values(const calls::Conv2dBackwardFilter& c) {
  ConvValues v = shape_values(c.a);
  v.alpha = 1.0f;
  v.beta = 1.0f;  // dw accumulates, as parameter gradients do
  if (v.lowp) {   // ... in f32: cuDNN writes a 16-bit dw that the caller adds
    v.beta = 0.0f;
    v.accumulate_widened = true;
  }
  if (v.covered && c.dbias) {
    v.bias_grad = true;
    v.db = {1, v.y.c, 1, 1};
    v.bias_alpha = 1.0f;
    v.bias_beta = 1.0f;  // dbias += sum dy
  }
  return v;
}

}  // namespace cohort::cuda::seams
