// Tensor-level layer ops: argument checks that report the values at fault, then one call into the
// op table of the tensors' device (semantics in cohort/backend/layer_args.hpp). Layers call these and
// never the Device virtuals. All tensors are f32 (class targets i64, argmax i32), contiguous and on
// one device. Outputs are overwritten except parameter gradients (dw, dbias, dgamma, dbeta), which
// accumulate (+=). Optional arguments are pointers; nullptr means "none".
//
// Errors name the op, the argument and its shape ("conv2d_forward: weight [32, 2, 3, 3] needs
// x with 2 * groups = 2 channels, x is [8, 3, 28, 28]"); layers check first with messages naming
// the layer, so users normally see those.
#pragma once

#include <cstdint>
#include <vector>

#include "cohort/core/op_options.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::ops {

struct Conv2dParams {
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  std::int64_t groups = 1;
};

// Output shape [N, K, OH, OW] for x [N, C, H, W] and weight [K, C / groups, R, S]; throws when the
// shapes or parameters do not fit (wrong rank, channels, groups not dividing C and K, the dilated
// kernel larger than the padded input, non-positive stride or dilation, negative padding).
Shape conv2d_output_shape(const Shape& x, const Shape& weight, const Conv2dParams& p);
// y = act(conv(x, weight) + bias); bias [K] optional.
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& y,
                    const Conv2dParams& p, Activation act = Activation::identity,
                    float act_alpha = 0.0f);
void conv2d_backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx,
                          const Conv2dParams& p);
// dweight += dW, dbias += sum dy (optional).
void conv2d_backward_filter(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor* dbias,
                            const Conv2dParams& p);

struct Pool2dParams {
  PoolKind kind = PoolKind::max;
  std::int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t dil_h = 1, dil_w = 1;  // max pooling only
  bool count_include_pad = true;      // avg pooling only
};
// Output shape [N, C, OH, OW] for x [N, C, H, W]; throws as PyTorch does for padding larger than
// half the kernel and for windows that do not fit.
Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p);
// argmax (i32, y's shape) is required for max pooling when backward will follow.
void pool2d_forward(const Tensor& x, Tensor& y, Tensor* argmax, const Pool2dParams& p);
void pool2d_backward(const Tensor& dy, const Tensor* argmax, Tensor& dx, const Pool2dParams& p);

void activation_forward(Activation f, float alpha, const Tensor& x, Tensor& y);
// Reads x for leaky_relu and gelu, y for relu, sigmoid and tanh (pass both; shapes are checked).
void activation_backward(Activation f, float alpha, const Tensor& x, const Tensor& y,
                         const Tensor& dy, Tensor& dx);

// y = act(y + bias) with bias [C] broadcast along axis `axis` of y (1 for NCHW, -1 for the
// features of a linear layer's [..., F] output).
void bias_add(const Tensor& bias, Tensor& y, int axis, Activation act = Activation::identity,
              float act_alpha = 0.0f);
// dbias += sum of dy over every axis except `axis`.
void bias_grad(const Tensor& dy, Tensor& dbias, int axis);
// activation_backward and then bias_grad of its dx, in one pass (the backward of
// bias_add(bias, y, axis, f)): dx = f'(x or y, dy), dbias += sum of dx over every axis except
// `axis`. The same bits as the two ops.
void bias_act_backward(Activation f, float alpha, const Tensor& x, const Tensor& y,
                       const Tensor& dy, Tensor& dx, Tensor& dbias, int axis);

// Softmax (log = false) or log-softmax along axis `dim` (negative counts from the end).
void softmax_forward(bool log, const Tensor& x, Tensor& y, int dim);
void softmax_backward(bool log, const Tensor& y, const Tensor& dy, Tensor& dx, int dim);

// Scaled dot-product attention over multi-head attention's packed in-projection output (no mask,
// no dropout; layout in cohort/backend/layer_args.hpp, AttentionArgs): qkv [N, T, 3, H, dh], out
// [N, T, H, dh] (the heads side by side, as the output projection reads them), lse [N, H, T] the
// log-sum-exp of each query row's scores, kept for backward. scale is 1 / sqrt(dh) in
// nn.MultiheadAttention. One fused op: the T x T probabilities are not stored.
void attention_forward(const Tensor& qkv, Tensor& out, Tensor& lse, float scale);
// dqkv [N, T, 3, H, dh] (overwritten) from dout [N, T, H, dh], with forward's qkv, out and lse.
void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse, const Tensor& dout,
                        Tensor& dqkv, float scale);

// x [N, C, ...] normalised per channel (axis 1). Training uses and updates batch statistics
// (running_mean / running_var updated when given); otherwise the running statistics are used and
// required. save_mean / save_invstd [C] are written for backward.
void batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta,
                        Tensor* running_mean, Tensor* running_var, Tensor& y, Tensor& save_mean,
                        Tensor& save_invstd, float eps, float momentum, bool training);
void batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor* gamma,
                         const Tensor& save_mean, const Tensor& save_invstd, Tensor* dx,
                         Tensor* dgamma, Tensor* dbeta, bool training);

// Normalises over the last `normalized_numel` elements of x (the trailing dimensions whose product
// it is); gamma / beta have that many elements. save_mean / save_rstd: one per normalised row.
// With `residual` and `sum` (both or neither), the residual add before the norm in the same
// pass: sum = x + residual is written and normalised (the same bits as ops::add, then the norm of
// the sum); backward then takes `sum` as its x.
void layer_norm_forward(const Tensor& x, std::int64_t normalized_numel, const Tensor* gamma,
                        const Tensor* beta, Tensor& y, Tensor& save_mean, Tensor& save_rstd,
                        float eps, const Tensor* residual = nullptr, Tensor* sum = nullptr);
// With `dx_add` (needs dx): dx = dx_add + the input gradient, in the same pass (the gradient a
// residual connection passes straight through; the same bits as ops::add after the backward).
void layer_norm_backward(const Tensor& x, const Tensor& dy, std::int64_t normalized_numel,
                         const Tensor* gamma, const Tensor& save_mean, const Tensor& save_rstd,
                         Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor* dx_add = nullptr);

// p in [0, 1]; the mask is a function of (seed, step, element index) only. With `act`, the
// activation before the dropout runs in the same pass: y = dropout(act(x)), and backward
// dx = act'(x, dropout'(dy)) from the activation's input `x` (required then). The same bits as
// activation_forward / activation_backward and the plain dropout.
void dropout_forward(const DropoutArgs& a, const Tensor& x, Tensor& y,
                     Activation act = Activation::identity, float act_alpha = 0.0f);
void dropout_backward(const DropoutArgs& a, const Tensor& dy, Tensor& dx,
                      Activation act = Activation::identity, float act_alpha = 0.0f,
                      const Tensor* x = nullptr);

// logp / logits [N, C] with target [N] (i64, every value in [0, C); checked on the host, which
// synchronises with the device for device targets). loss [N] gets -logp[r, target[r]].
void nll_forward(const Tensor& logp, const Tensor& target, Tensor& loss);
// dx [N, C] = -scale at (r, target[r]), 0 elsewhere.
void nll_backward(const Tensor& target, float scale, Tensor& dx);
// dx [N, C] = scale * (exp(logp) - (1 - ls) * onehot(target) - ls / C): the gradient of cross
// entropy w.r.t. the logits, given their log-softmax; ls is torch's label_smoothing, in [0, 1].
void cross_entropy_backward(const Tensor& logp, const Tensor& target, float scale, Tensor& dx,
                            float label_smoothing = 0.0f);

// ---- data movement: what attention and a vision transformer do between their GEMMs ----

// out = x with its axes permuted, as x.permute(perm).contiguous(): out's axis a is x's axis
// perm[a] (negative entries count from the end); out has the permuted shape and does not overlap
// x. Any rank, as long as at most PermuteArgs::max_rank (6) axes remain once extent-1 axes are
// dropped and axes that stay neighbours are merged. The backward of a permutation is the
// inverse permutation (inverse_permutation below).
void permute(const Tensor& x, const std::vector<int>& perm, Tensor& out);
Tensor permute(const Tensor& x, const std::vector<int>& perm);
// q with q[perm[a]] = a: permute(permute(x, p), inverse_permutation(p)) is x.
std::vector<int> inverse_permutation(const std::vector<int>& perm);

// dst.narrow(axis, dst_start, length) = src.narrow(axis, src_start, length), or += with
// accumulate; the rest of dst is untouched. src and dst have the same rank and the same extents
// on every axis but `axis`, except that src may have extent 1 on every axis before `axis`: it is
// then broadcast over them (one class token into every image of a batch). src and dst must not
// overlap.
void slice_copy(const Tensor& src, std::int64_t src_start, Tensor& dst, std::int64_t dst_start,
                std::int64_t length, int axis, bool accumulate = false);
// A new tensor holding x.narrow(axis, start, length) (torch.narrow, copied: contiguous).
Tensor narrow(const Tensor& x, int axis, std::int64_t start, std::int64_t length);
// torch.cat(xs, axis): the tensors agree on every extent but `axis`, on one device.
Tensor cat(const std::vector<Tensor>& xs, int axis);

}  // namespace cohort::ops
