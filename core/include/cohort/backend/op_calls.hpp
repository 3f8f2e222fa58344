// One struct per op of the device op table: the op's arguments and the device pointers it reads
// and writes, exactly what a backend needs to run it. The op front ends (cohort/core/ops.hpp,
// layer_ops.hpp, optim_ops.hpp) fill these after checking every tensor, so a backend may trust
// them: each pointer covers exactly the extents the struct describes, all on one device.
//
// Conventions for every struct:
//  - `const T*` fields are read, `T*` fields written. Outputs are overwritten, except parameter
//    gradients (dw, dbias, dgamma, dbeta) and the optimizer state, which are updated in place:
//    gradients accumulate (+=) across a backward pass, as PyTorch's .grad does.
//  - A field commented "nullable" may be nullptr, meaning "none": not read, not written.
//  - `out` may alias an input of the same size (element-wise ops only).
//  - Floating-point operands are f32, class indices i64, pooling argmax i32; Fill takes any dtype.
//
// Adding an op: a struct here, a line in cohort/backend/op_list.hpp, its math once in
// backends/common/ops/<family>.hpp, and its checked front end (core/src/ops/<family>.cpp). See docs/ARCHITECTURE.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/core/dtype.hpp"
#include "cohort/backend/layer_args.hpp"
#include "cohort/core/optim_args.hpp"

namespace cohort {

// Row-major GEMM: C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C. op(X) is X or X^T.
// lda/ldb/ldc are the row strides of A, B, C as stored (A is m x k when !trans_a, k x m when trans_a).
// beta == 0 ignores C's old contents (NaN there does not propagate), as BLAS does.
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  std::int64_t lda = 0;
  const float* b = nullptr;
  std::int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  std::int64_t ldc = 0;
  DType compute = DType::f32;  // the autocast type, as Conv2dArgs::compute
};

namespace calls {

// ---- tensor ops ----
struct Fill {  // every dtype; the value converted as static_cast (bf16: round to nearest even)
  void* x;
  DType dtype;
  std::size_t n;
  double value;
};
// dst[i] = src[i] converted to dst_dtype. Floating-point dtypes only (f32, f64, bf16, f16); bf16
// and f16 round to nearest even (cohort::float_to_bf16 / float_to_f16); f64 to a 16-bit type goes
// through f32, as PyTorch's does. src and dst do not overlap (unless the same dtype and pointer).
struct Cast {
  const void* src;
  DType src_dtype;
  void* dst;
  DType dst_dtype;
  std::size_t n;
};
struct Binary {
  const float* a;
  const float* b;
  float* out;
  std::size_t n;
};
struct Add : Binary {  // out = f(a + b): a residual connection's sum and the activation after it
  Activation f = Activation::identity;
  float alpha = 0.0f;
};
struct Sub : Binary {};  // out = a - b
struct Mul : Binary {};  // out = a * b
struct Axpy {            // y += alpha * x
  float alpha;
  const float* x;
  float* y;
  std::size_t n;
};
struct Clamp {  // out = min(max(x, lo), hi); NaN stays NaN (torch.clamp)
  float lo, hi;
  const float* x;
  float* out;
  std::size_t n;
};
struct Scale {  // out = alpha * x
  float alpha;
  const float* x;
  float* out;
  std::size_t n;
};
// Row reductions of a row-major [rows x cols] matrix, cols >= 1: sums accumulate in double; max
// and argmax let NaN win, argmax picks the first maximal column.
struct RowReduce {
  const float* x;
  std::size_t rows, cols;
  float* out;
};
struct ReduceSum : RowReduce {};
struct ReduceSumSq : RowReduce {};  // sum of x^2 per row (the squared norms clip_grad_norm needs)
struct ReduceMax : RowReduce {};
struct Argmax {
  const float* x;
  std::size_t rows, cols;
  std::int64_t* out;
};
struct Gemm : GemmArgs {};
// `batch` independent GEMMs of the same shape: for i in [0, batch), the GemmArgs applied to
// a + i * stride_a, b + i * stride_b, c + i * stride_c (strides in elements; the C blocks do not
// overlap). The attention of a transformer is this shape (cuBLAS: strided-batched GEMM).
struct GemmBatched : GemmArgs {
  std::int64_t batch = 0, stride_a = 0, stride_b = 0, stride_c = 0;
};
// Element i gets the Philox4x32-10 number at stream position offset + i under `seed`
// (cohort/core/rng.hpp), so every device and every split of x draw the same values.
struct FillUniform {
  float* x;
  std::size_t n;
  std::uint64_t seed, offset;
  float lo, hi;
};
struct FillNormal {  // Box-Muller over lane pairs of a Philox block
  float* x;
  std::size_t n;
  std::uint64_t seed, offset;
  float mean, stddev;
};

// ---- layer ops (extents and semantics in cohort/backend/layer_args.hpp) ----
struct Conv2dForward {  // y = act(conv(x, w) + bias)
  Conv2dArgs a;
  const float* x;
  const float* w;
  const float* bias;  // nullable
  float* y;
};
struct Conv2dBackwardData {  // dx = conv^T(dy, w)
  Conv2dArgs a;
  const float* dy;
  const float* w;
  float* dx;
};
struct Conv2dBackwardFilter {  // dw += dy (*) x, dbias += sum dy
  Conv2dArgs a;
  const float* x;
  const float* dy;
  float* dw;
  float* dbias;  // nullable
};
// argmax (max pooling; nullable): per output, the flat index ih * w + iw of the winner in its
// input plane, read by Pool2dBackward.
struct Pool2dForward {
  Pool2dArgs a;
  const float* x;
  float* y;
  std::int32_t* argmax;
};
struct Pool2dBackward {
  Pool2dArgs a;
  const float* dy;
  const std::int32_t* argmax;  // max pooling
  float* dx;
};
struct ActivationForward {
  Activation f;
  float alpha;
  const float* x;
  float* y;
  std::size_t n;
};
struct ActivationBackward {  // reads x (leaky_relu, gelu) or y (relu, sigmoid, tanh)
  Activation f;
  float alpha;
  const float* x;
  const float* y;
  const float* dy;
  float* dx;
  std::size_t n;
};
struct BiasAdd {  // y[o, c, i] = act(y[o, c, i] + bias[c])
  ChannelDims d;
  const float* bias;
  float* y;
  Activation f;
  float alpha;
};
struct BiasGrad {  // dbias[c] += sum_{o, i} dy[o, c, i]
  ChannelDims d;
  const float* dy;
  float* dbias;
};
// An activation's backward and the bias gradient of the layer before it in one pass (cuBLASLt's
// DRELU_BGRAD / DGELU_BGRAD epilogues): dx = act'(x or y, dy) as ActivationBackward, then
// dbias[c] += sum_{o, i} dx[o, c, i] as BiasGrad sums it.
struct BiasActBackward {
  ChannelDims d;
  Activation f;
  float alpha;
  const float* x;
  const float* y;
  const float* dy;
  float* dx;
  float* dbias;
};
struct SoftmaxForward {  // along `channels` of [outer, channels, inner]; log: log-softmax
  bool log;
  ChannelDims d;
  const float* x;
  float* y;
};
struct SoftmaxBackward {
  bool log;
  ChannelDims d;
  const float* y;
  const float* dy;
  float* dx;
};
// Writes save_mean / save_invstd [c] (the statistics used: the batch's when training, else the
// running ones); updates running_mean / running_var when training. gamma / beta nullable (1, 0).
struct BatchNormForward {
  BatchNormArgs a;
  const float* x;
  const float* gamma;
  const float* beta;
  float* running_mean;  // nullable
  float* running_var;   // nullable
  float* y;
  float* save_mean;
  float* save_invstd;
};
struct BatchNormBackward {
  BatchNormArgs a;
  const float* x;
  const float* dy;
  const float* gamma;  // nullable
  const float* save_mean;
  const float* save_invstd;
  float* dx;      // nullable
  float* dgamma;  // nullable
  float* dbeta;   // nullable
};
// With `residual`, the residual add before the norm in the same pass: sum = x + residual is
// written, then normalised (a transformer block's `x = x + branch; h = ln(x)`).
struct LayerNormForward {
  LayerNormArgs a;
  const float* x;
  const float* gamma;  // nullable
  const float* beta;   // nullable
  float* y;
  float* save_mean;
  float* save_rstd;
  const float* residual = nullptr;
  float* sum = nullptr;  // with residual
};
// With `dx_add`, dx = dx_add + the norm's input gradient (the residual's gradient passed
// straight through, summed in the same pass).
struct LayerNormBackward {
  LayerNormArgs a;
  const float* x;
  const float* dy;
  const float* gamma;  // nullable
  const float* save_mean;
  const float* save_rstd;
  float* dx;      // nullable
  float* dgamma;  // nullable
  float* dbeta;   // nullable
  const float* dx_add = nullptr;
};
struct AttentionForward {  // layout and semantics: AttentionArgs
  AttentionArgs a;
  const float* qkv;
  float* out;
  float* lse;
};
struct AttentionBackward {  // dqkv overwritten, [n, t, 3, h, dh] as qkv
  AttentionArgs a;
  const float* qkv;
  const float* out;
  const float* dout;
  const float* lse;
  float* delta;  // [n, h, t], written: sum over dh of dout * out, per query row
  float* dqkv;
};
// y = dropout(f(x)): an activation f fused into the dropout's pass (identity: plain dropout).
struct DropoutForward {
  DropoutArgs a;
  const float* x;
  float* y;
  std::size_t n;
  Activation f = Activation::identity;
  float alpha = 0.0f;
};
// dx = f'(x, dropout'(dy)): regenerates the forward's mask from (seed, step); with f not identity
// it reads the activation's input x (f(x) is recomputed where f' needs the output).
struct DropoutBackward {
  DropoutArgs a;
  const float* dy;
  float* dx;
  std::size_t n;
  Activation f = Activation::identity;
  float alpha = 0.0f;
  const float* x = nullptr;
};
// Data movement (semantics in cohort/backend/layer_args.hpp): the head split and merge of
// attention, and the token concatenation and selection of a vision transformer. Backward of
// either is the same op (the inverse permutation; the slice copied the other way).
struct Permute {
  PermuteArgs a;
  const float* x;
  float* out;  // does not overlap x
};
struct SliceCopy {  // dst rows (+)= src rows; every other element of dst is left as it was
  SliceCopyArgs a;
  const float* src;
  float* dst;
};
// Class-index losses over logp [rows, classes] and target [rows] (i64, each in [0, classes): the
// front end checks on the host).
struct NllForward {  // loss[r] = -logp[r, target[r]]
  const float* logp;
  const std::int64_t* target;
  std::size_t rows, classes;
  float* loss;
};
struct NllBackward {  // dx = -scale at the target, 0 elsewhere
  const std::int64_t* target;
  std::size_t rows, classes;
  float scale;
  float* dx;
};
// dx = scale * (exp(logp) - (1 - smoothing) * onehot(target) - smoothing / classes); smoothing is
// torch's label_smoothing (0: the plain loss, bit for bit).
struct CrossEntropyBackward {
  const float* logp;
  const std::int64_t* target;
  std::size_t rows, classes;
  float scale;
  float smoothing;
  float* dx;
};

// ---- optimizer ops: one fused in-place update of one parameter tensor and its state (formulas
// in cohort/core/optim_args.hpp). A state pointer the args do not use may be nullptr. ----
struct SgdStep {
  SgdArgs a;
  float* param;
  const float* grad;
  float* momentum_buffer;
  std::size_t n;
};
struct AdamStep {  // torch.optim.Adam and AdamW
  AdamArgs a;
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float* max_exp_avg_sq;
  std::size_t n;
};
struct AdadeltaStep {
  AdadeltaArgs a;
  float* param;
  const float* grad;
  float* square_avg;
  float* acc_delta;
  std::size_t n;
};
struct RmspropStep {
  RmspropArgs a;
  float* param;
  const float* grad;
  float* square_avg;
  float* grad_avg;
  float* momentum_buffer;
  std::size_t n;
};
// The GradScaler's pass over one gradient: x *= inv in place; out[b] = the largest |x| of block b
// (elements [b * block, min(n, (b + 1) * block)), after scaling), NaN winning; an inf gives inf.
// n >= 1, block >= 1, out has ceil(n / block) elements.
struct UnscaleMaxAbs {
  float inv;
  float* x;
  std::size_t n, block;
  float* out;
};

}  // namespace calls
}  // namespace cohort
