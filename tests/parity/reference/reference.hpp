// The parity test's independent reference: every op of the device table written again for clarity,
// as plain nested loops over the documented semantics (cohort/backend/op_calls.hpp, layer_args.hpp,
// optim_args.hpp, with PyTorch's documented behaviour where those defer to it), accumulating in
// double. The parity test compares each device's output with these values.
//
// Why it is shaped so: this library includes no cohort header and links nothing of cohort
// (tests/parity/CMakeLists.txt), so it cannot call a cohort kernel, oneDNN or BLAS by accident;
// its arguments are its own plain structs and vectors of doubles (inputs are f32 values, held
// exactly). One source file per op family, named like the families of backends/common.
// Outputs are doubles. Where the documented result is a fixed sequence of f32 operations (add, a
// cast, axpy, a uniform fill, the optimizer steps) the reference rounds each to f32 as written, so
// the test can ask for equality; elsewhere it keeps double and the row states a tolerance.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace parity_ref {

using Vec = std::vector<double>;

// ---- numbers (tensor.cpp) ----
enum class Type { f32, f64, bf16, f16, i32, i64, u8 };
// v rounded to nearest (ties to even) in a floating type, or converted as C++'s static_cast
// (truncation toward zero) to an integer type.
double round_to(Type t, double v);
double f32(double v);  // round_to(Type::f32, v)

// ---- tensor and element-wise ops (tensor.cpp) ----
Vec fill(Type t, std::size_t n, double value);
// src (values of type `from`) converted to `to`; f64 to a 16-bit type goes through f32.
Vec cast(const Vec& src, Type from, Type to);
Vec add(const Vec& a, const Vec& b);
Vec sub(const Vec& a, const Vec& b);
Vec mul(const Vec& a, const Vec& b);
Vec axpy(double alpha, const Vec& x, const Vec& y);  // y + alpha x, two f32 roundings
Vec scale(double alpha, const Vec& x);
Vec clamp(const Vec& x, double lo, double hi);  // NaN stays NaN

// ---- random numbers (random.cpp): Philox4x32-10, from Salmon et al. (SC'11) ----
std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> ctr,
                                           std::array<std::uint32_t, 2> key);
// Checks philox4x32_10 against Random123's published known-answer vectors; false on a mismatch.
bool philox_known_answers();
// Stream position p of `seed`: block p / 4 (counter {lo, hi, 0, 0}, key {seed lo, seed hi}),
// lane p % 4; 24 bits to [0, 1) (open0: (0, 1]).
double unit_at(std::uint64_t seed, std::uint64_t p, bool open0 = false);
Vec uniform(std::size_t n, std::uint64_t seed, std::uint64_t offset, double lo, double hi);  // f32
// Box-Muller over lane pairs (0, 1) and (2, 3) of a block: u1 = the pair's first lane in (0, 1],
// u2 = its second in [0, 1); the first lane takes r cos(2 pi u2), the second r sin(2 pi u2).
Vec normal(std::size_t n, std::uint64_t seed, std::uint64_t offset, double mean, double stddev);

// ---- row reductions of [rows, cols] (reductions.cpp) ----
Vec sum_last(const Vec& x, std::size_t rows, std::size_t cols);
Vec sum_sq_last(const Vec& x, std::size_t rows, std::size_t cols);
Vec max_last(const Vec& x, std::size_t rows, std::size_t cols);     // NaN wins
Vec argmax_last(const Vec& x, std::size_t rows, std::size_t cols);  // first maximum; NaN wins
// dbias[c] = dbias0[c] + sum over (o, i) of dy[o, c, i]
Vec bias_grad(const Vec& dy, std::int64_t outer, std::int64_t channels, std::int64_t inner,
              const Vec& dbias0);

// ---- GEMM (gemm.cpp), row-major, op(X) = X or X^T as stored ----
// C = alpha op(A) op(B) + beta C0, with beta == 0 ignoring C0 (NaN there does not propagate).
Vec gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
         const Vec& a, const Vec& b, double beta, const Vec& c0);
Vec gemm_batched(std::int64_t batch, bool ta, bool tb, std::int64_t m, std::int64_t n,
                 std::int64_t k, double alpha, const Vec& a, const Vec& b, double beta,
                 const Vec& c0);

// ---- activations (activations.cpp) ----
enum class Act { identity, relu, leaky_relu, gelu, sigmoid, tanh };
double activate(Act f, double alpha, double x);
double activate_grad(Act f, double alpha, double x);  // d act / dx at x
Vec activation_forward(Act f, double alpha, const Vec& x);
Vec activation_backward(Act f, double alpha, const Vec& x, const Vec& dy);
// y[o, c, i] = act(y0[o, c, i] + bias[c])
Vec bias_add(const Vec& y0, const Vec& bias, std::int64_t outer, std::int64_t channels,
             std::int64_t inner, Act f, double alpha);

// ---- convolution (convolution.cpp): PyTorch's Conv2d (cross-correlation), NCHW / OIHW ----
struct Conv {
  std::int64_t n, c, h, w;  // x
  std::int64_t k, r, s;     // weight [k, c / groups, r, s]
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  std::int64_t groups = 1;
  std::int64_t oh() const;
  std::int64_t ow() const;
};
// y = act(conv(x, w) + bias); bias empty for none.
Vec conv2d_forward(const Conv& p, const Vec& x, const Vec& w, const Vec& bias,
                   Act f = Act::identity, double alpha = 0);
Vec conv2d_backward_data(const Conv& p, const Vec& dy, const Vec& w);  // dx (overwritten)
// dw0 + dW and dbias0 + sum dy (dbias0 empty: none)
void conv2d_backward_filter(const Conv& p, const Vec& x, const Vec& dy, const Vec& dw0,
                            const Vec& dbias0, Vec* dw, Vec* dbias);

// ---- pooling (pooling.cpp): PyTorch's max_pool2d and avg_pool2d (no ceil mode) ----
struct Pool {
  bool max = true;
  std::int64_t n, c, h, w;
  std::int64_t kh, kw, stride_h, stride_w, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  bool count_include_pad = true;
  std::int64_t oh() const;
  std::int64_t ow() const;
};
// y, and for max pooling the flat index ih * w + iw of each window's first maximum in its plane.
void pool2d_forward(const Pool& p, const Vec& x, Vec* y, Vec* argmax);
Vec pool2d_backward(const Pool& p, const Vec& x, const Vec& dy);  // dx (overwritten)

// ---- normalisation (normalisation.cpp) ----
struct BatchNormOut {
  Vec y, save_mean, save_invstd, running_mean, running_var;
};
// x [n, c, inner]; gamma / beta empty: 1 / 0. Training: batch statistics (biased variance), the
// running ones updated with the unbiased variance; otherwise the running statistics.
BatchNormOut batch_norm_forward(const Vec& x, std::int64_t n, std::int64_t c, std::int64_t inner,
                                const Vec& gamma, const Vec& beta, const Vec& running_mean,
                                const Vec& running_var, double eps, double momentum, bool training);
struct NormGrads {
  Vec dx, dgamma, dbeta;
};
// The statistics are those the forward used: the batch's (training) or running_mean /
// running_var (eval). dgamma0 / dbeta0: the accumulators' old values.
NormGrads batch_norm_backward(const Vec& x, const Vec& dy, std::int64_t n, std::int64_t c,
                              std::int64_t inner, const Vec& gamma, const Vec& running_mean,
                              const Vec& running_var, double eps, bool training, const Vec& dgamma0,
                              const Vec& dbeta0);
struct LayerNormOut {
  Vec y, mean, rstd;
};
LayerNormOut layer_norm_forward(const Vec& x, std::int64_t rows, std::int64_t cols,
                                const Vec& gamma, const Vec& beta, double eps);
NormGrads layer_norm_backward(const Vec& x, const Vec& dy, std::int64_t rows, std::int64_t cols,
                              const Vec& gamma, double eps, const Vec& dgamma0, const Vec& dbeta0);

// ---- attention (attention.cpp): scaled dot-product attention of qkv [n, t, 3, h, dh] (q, k, v
// packed as multi-head attention's projection writes them), no mask ----
struct AttentionOut {
  Vec out;  // [n, t, h, dh]
  Vec lse;  // [n, h, t]: log sum_j exp(scale q_i . k_j)
};
AttentionOut attention_forward(const Vec& qkv, std::int64_t n, std::int64_t t, std::int64_t h,
                               std::int64_t dh, double scale);
// The gradient w.r.t. qkv ([n, t, 3, h, dh]) of sum(out * dout).
Vec attention_backward(const Vec& qkv, const Vec& dout, std::int64_t n, std::int64_t t,
                       std::int64_t h, std::int64_t dh, double scale);

// ---- softmax and losses (softmax_losses.cpp); x seen as [outer, channels, inner] ----
Vec softmax_forward(bool log, const Vec& x, std::int64_t outer, std::int64_t channels,
                    std::int64_t inner);
// The gradient w.r.t. x of (log-)softmax(x) given dy.
Vec softmax_backward(bool log, const Vec& x, const Vec& dy, std::int64_t outer,
                     std::int64_t channels, std::int64_t inner);
Vec nll_forward(const Vec& logp, const std::vector<std::int64_t>& target, std::int64_t classes);
Vec nll_backward(const std::vector<std::int64_t>& target, std::int64_t classes, double scale);
// scale * (softmax(logits) - q), q the target distribution with label smoothing (torch's: 1 - s
// + s / C at the class, s / C elsewhere): cross entropy's gradient w.r.t. the logits.
Vec cross_entropy_backward(const Vec& logits, const std::vector<std::int64_t>& target,
                           std::int64_t classes, double scale, double smoothing = 0);

// ---- dropout (dropout.cpp): inverted dropout with a Philox mask ----
// Element i is kept when the 24-bit unit number of lane i % 4 of Philox block (counter
// {block lo, block hi, step lo, step hi}, key {seed lo, seed hi}), block = i / 4, is >= p.
std::vector<bool> dropout_keep(std::size_t n, double p, std::uint64_t seed, std::uint64_t step);
// Kept elements times the f32 scale 1 / (1 - p), the rest 0 (forward: x; backward: dy).
Vec dropout(const Vec& x, float p, std::uint64_t seed, std::uint64_t step);

// ---- reshaping (reshaping.cpp); shapes are extents, row-major ----
using Dims = std::vector<std::int64_t>;
// x.permute(perm).contiguous(); negative perm entries count from the end.
Vec permute(const Vec& x, const Dims& shape, const std::vector<int>& perm);
// dst0 with dst.narrow(axis, dst_start, length) (+)= src.narrow(axis, src_start, length); src's
// extents before `axis` may all be 1 (broadcast over dst's).
Vec slice_copy(const Vec& src, const Dims& src_shape, std::int64_t src_start, const Vec& dst0,
               const Dims& dst_shape, std::int64_t dst_start, std::int64_t length, int axis,
               bool accumulate);
Vec narrow(const Vec& x, const Dims& shape, int axis, std::int64_t start, std::int64_t length);
Vec cat(const std::vector<Vec>& xs, const std::vector<Dims>& shapes, int axis);

// ---- optimizers (optimizers.cpp): the per-element formulas of cohort/core/optim_args.hpp, which
// follow torch.optim (1.13), each step rounded to f32 in the order written; every argument is the
// f32 value the op receives. ----
struct Sgd {
  double neg_lr, momentum, one_minus_dampening = 1, weight_decay = 0;
  bool nesterov = false, maximize = false, first_step = false;
};
void sgd_step(const Sgd& a, Vec& p, const Vec& grad, Vec& buf);
struct Adam {
  double beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, param_scale,
      neg_step_size, bias_correction2_sqrt;
  bool decoupled_weight_decay = false, amsgrad = false, maximize = false;
};
void adam_step(const Adam& a, Vec& p, const Vec& grad, Vec& m, Vec& v, Vec& vmax);
struct Adadelta {
  double neg_lr, rho, one_minus_rho, eps, weight_decay = 0;
  bool maximize = false;
};
void adadelta_step(const Adadelta& a, Vec& p, const Vec& grad, Vec& square_avg, Vec& acc_delta);
struct Rmsprop {
  double neg_lr, alpha, one_minus_alpha, eps, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;
};
void rmsprop_step(const Rmsprop& a, Vec& p, const Vec& grad, Vec& square_avg, Vec& grad_avg,
                  Vec& buf);
// The GradScaler's pass: x *= inv (in place, rounded to float); returns max |x| per block.
Vec unscale_max_abs(double inv, Vec& x, std::size_t block);

}  // namespace parity_ref
