// Backend interface: the extents of the layer ops' calls (conv2d_forward, pool2d_forward,
// batch_norm_forward, ...): plain structs shared by the call structs (cohort/backend/op_calls.hpp),
// the kernels written once (backends/common/ops/, compiled by the host compiler and by nvcc) and
// the checked front ends (core/src/ops/), which fill them. The options users pass (Activation,
// PoolKind, DropoutArgs) are in cohort/core/op_options.hpp. Extents are int64 so no product of them
// overflows; layouts are PyTorch's (NCHW activations, OIHW convolution weights).
//
// The front end fills these structs after checking every extent against the tensors, so a backend
// may trust them: every pointer it receives covers exactly the extents described here.
#pragma once

#include <cstdint>

#include "cohort/core/dtype.hpp"
#include "cohort/core/op_options.hpp"

namespace cohort {

// A tensor seen as [outer, channels, inner]: channel c of element (o, i) sits at
// (o * channels + c) * inner + i. NCHW is outer = N, channels = C, inner = H * W; a batch of
// feature rows [N, F] is outer = N, channels = F, inner = 1.
struct ChannelDims {
  std::int64_t outer = 1, channels = 1, inner = 1;
  std::int64_t numel() const { return outer * channels * inner; }
};

// 2-D convolution (cross-correlation, as PyTorch's Conv2d):
//   x [n, c, h, w], weight [k, c / groups, r, s], bias [k] (optional), y [n, k, oh, ow],
//   y[b, o, i, j] = bias[o] + sum_{ci, p, q} w[o, ci, p, q] *
//                   x[b, g * c/groups + ci, i * stride_h - pad_h + p * dil_h, j * stride_w - pad_w + q * dil_w]
// with g = o / (k / groups) and x read as 0 outside the image. oh = conv_out_size(h, r, ...).
struct Conv2dArgs {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // input
  std::int64_t k = 0, r = 0, s = 0;          // output channels, kernel height and width
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  std::int64_t groups = 1;
  std::int64_t oh = 0, ow = 0;  // output height and width
  // Forward only: y = act(conv + bias), applied while each image's output is still in cache.
  Activation act = Activation::identity;
  float act_alpha = 0.0f;  // leaky_relu's slope
  // The autocast type (cohort/core/autocast.hpp): bf16 / f16 ask for inputs rounded to it, products
  // summed in f32, results written as f32. A backend that cannot calls autocast_fell_back and
  // computes in f32. Operands and results are f32 buffers either way.
  DType compute = DType::f32;
};

// 2-D pooling, as PyTorch's max_pool2d (implicit -inf padding; the first maximum of a window wins
// and NaN beats every number) and avg_pool2d (count_include_pad chooses the divisor: the window
// clipped to the padded input, or only its valid part). x [n, c, h, w] -> y [n, c, oh, ow].
struct Pool2dArgs {
  PoolKind kind = PoolKind::max;
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  std::int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t dil_h = 1, dil_w = 1;  // max pooling only (1 for avg)
  bool count_include_pad = true;      // avg pooling only
  std::int64_t oh = 0, ow = 0;
};

// Batch normalisation over x [n, c, inner] (inner = H * W), per channel c:
//   training:  mean, biased var over (n, inner); y = (x - mean) / sqrt(var + eps) * gamma + beta;
//              running_mean = (1 - momentum) running_mean + momentum mean,
//              running_var  = (1 - momentum) running_var  + momentum var * M / (M - 1), M = n * inner
//   otherwise: the same with running_mean / running_var in place of the batch statistics.
struct BatchNormArgs {
  std::int64_t n = 0, c = 0, inner = 1;
  float eps = 1e-5f;
  float momentum = 0.1f;  // the layer turns PyTorch's momentum=None into 1 / num_batches_tracked
  bool training = true;   // batch statistics (and running-stat updates, when running stats exist)
};

// Layer normalisation of each of `rows` rows of `cols` elements:
//   y = (x - mean) / sqrt(var + eps) * gamma + beta, gamma and beta of `cols` elements (optional).
struct LayerNormArgs {
  std::int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
};

// Scaled dot-product attention of multi-head attention over the in-projection's packed output
// (torch.nn.functional.scaled_dot_product_attention of the q, k, v nn.MultiheadAttention splits
// from it, no mask, no dropout):
//   qkv [n, t, 3, h, dh]: q = qkv[:, :, 0], k = qkv[:, :, 1], v = qkv[:, :, 2], each [n, t, h, dh];
//   out [n, t, h, dh]:    out[b, i, hh] = sum_j P[b, hh, i, j] v[b, j, hh],
//                         P = softmax_j(scale q[b, i, hh] . k[b, j, hh]);
//   lse [n, h, t]:        log sum_j exp(scale q . k_j), what backward recomputes P from.
// Reading q, k, v where the projection wrote them and writing out where the output projection reads
// it saves the four head permutations the unfused layer makes, and P is never stored.
struct AttentionArgs {
  std::int64_t n = 0, t = 0, h = 0, dh = 0;
  float scale = 1.0f;  // 1 / sqrt(dh) in nn.MultiheadAttention
};

// Axis permutation of a contiguous row-major tensor (torch.permute followed by .contiguous()):
// output axis a is input axis perm[a], so out[i_0, ..., i_{rank-1}] = x[j] with j[perm[a]] = i_a.
// The front end (cohort::ops::permute) first drops extent-1 axes and merges axes that stay
// neighbours in the same order, so any permutation that needs at most max_rank axes after that
// fits: [N, T, H, dh] -> [N, H, T, dh] is 4 axes, [N, T, 3, H, dh] -> [3, N, H, T, dh] is 5.
struct PermuteArgs {
  static constexpr int max_rank = 6;
  int rank = 1;                          // in [1, max_rank]
  std::int64_t dims[max_rank] = {1};     // the input's extents, dims[0..rank)
  int perm[max_rank] = {0};              // a permutation of 0..rank-1
};

// A block of rows copied between two tensors seen as [outer, len, inner] around one axis (the
// rows are that axis; torch's dst.narrow(axis, dst_start, length).copy_(src.narrow(...))):
//   dst[o, dst_start + j, i] = (accumulate ? dst[o, dst_start + j, i] : 0)
//                              + src[src_broadcast ? 0 : o, src_start + j, i]
// for o < outer, j < length, i < inner. src_broadcast: src has one outer slice, copied into
// every one of dst's (the class token of a ViT into each image of the batch). src and dst do not
// overlap.
struct SliceCopyArgs {
  std::int64_t outer = 1, inner = 1, length = 0;
  std::int64_t src_len = 0, src_start = 0;  // src's extent along the axis, first row read
  std::int64_t dst_len = 0, dst_start = 0;  // dst's extent along the axis, first row written
  bool src_broadcast = false;
  bool accumulate = false;
};

}  // namespace cohort
