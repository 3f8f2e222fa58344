// The device abstraction: one object per compute device (the host, each GPU) that owns memory
// and runs the op table the layers call. Layers and the Tensor front end talk only to this
// interface; Kokkos, CUDA, cuDNN and cuBLAS types stay inside each backend's own files.
//
// Contracts that hold for every entry of the op table:
//  - pointers are memory allocated by this device, contiguous, holding `n` elements (or the stated
//    matrix extents); `out` may alias an input of the same size;
//  - ops are enqueued in order on the device's single stream: on the host they have finished when
//    the call returns; on a GPU they may still be running, and synchronize() or a device-to-host
//    copy waits for them;
//  - a backend implements every op for which supports(op, dtype) is true and throws
//    cohort::Error (naming itself and the op) for the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohort/core/dtype.hpp"
#include "cohort/core/layer_args.hpp"
#include "cohort/core/optim_args.hpp"

namespace cohort {

enum class DeviceType { host, cuda };

enum class Op : int {
  fill,          // every dtype
  add,           // out = a + b
  sub,           // out = a - b
  mul,           // out = a * b
  axpy,          // y += alpha * x
  scale,         // out = alpha * x
  reduce_sum,    // out[r] = sum_c x[r, c]
  reduce_max,    // out[r] = max_c x[r, c]
  argmax,        // out[r] = first c with x[r, c] maximal (i64)
  gemm,          // C = alpha op(A) op(B) + beta C
  fill_uniform,  // Philox, same numbers on every device
  fill_normal,
  // --- layer ops --- (arguments and exact semantics: cohort/core/layer_args.hpp)
  conv2d_forward,          // y = act(conv(x, w) + bias)
  conv2d_backward_data,    // dx = conv^T(dy, w)
  conv2d_backward_filter,  // dw += dy (*) x, dbias += sum dy
  pool2d_forward,          // max (with argmax) or average pooling
  pool2d_backward,
  activation_forward,      // relu, leaky_relu, gelu, sigmoid, tanh
  activation_backward,
  bias_add,                // y[o, c, i] = act(y[o, c, i] + bias[c])
  bias_grad,               // dbias[c] += sum_{o, i} dy[o, c, i]
  softmax_forward,         // softmax or log-softmax along the channel axis
  softmax_backward,
  batch_norm_forward,
  batch_norm_backward,
  layer_norm_forward,
  layer_norm_backward,
  dropout_forward,
  dropout_backward,
  nll_forward,             // loss[r] = -logp[r, target[r]]
  nll_backward,            // dx = -scale at the target, 0 elsewhere
  cross_entropy_backward,  // dx = scale * (exp(logp) - onehot(target))
  // --- end of layer ops ---
  // --- optimizer ops --- (fused in-place updates, one per optimizer; see cohort/core/optim_args.hpp)
  sgd_step,       // torch.optim.SGD
  adam_step,      // torch.optim.Adam and AdamW
  adadelta_step,  // torch.optim.Adadelta
  rmsprop_step,   // torch.optim.RMSprop
  // --- end of optimizer ops ---
  count_
};
const char* op_name(Op op);

enum class ReduceOp { sum, max };

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
};

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // --- identity ---
  virtual std::string name() const = 0;  // "host", "cuda:0"
  virtual DeviceType type() const = 0;
  virtual int index() const { return 0; }
  // True when the host may dereference this device's pointers directly.
  virtual bool host_accessible() const = 0;

  // --- memory ---
  // Returns memory aligned to at least 64 bytes, or throws cohort::Error naming the device and the
  // size. allocate(0) returns nullptr. deallocate(nullptr, 0) is a no-op.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  // Copies block the calling thread until the bytes are in place (d2h waits for queued ops).
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  // Device-to-device within this device; enqueued on the stream.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Waits for every op enqueued so far.
  virtual void synchronize() = 0;

  // --- op table ---
  virtual bool supports(Op op, DType dtype) const = 0;

  virtual void fill(void* x, DType dtype, std::size_t n, double value) = 0;
  virtual void add(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void sub(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void mul(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void axpy(float alpha, const float* x, float* y, std::size_t n) = 0;
  virtual void scale(float alpha, const float* x, float* out, std::size_t n) = 0;
  // Reduces each row of a [rows x cols] matrix; cols >= 1. Sums accumulate in double.
  virtual void reduce(ReduceOp op, const float* x, std::size_t rows, std::size_t cols,
                      float* out) = 0;
  virtual void argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out) = 0;
  virtual void gemm(const GemmArgs& args) = 0;
  // Element i of x gets the Philox4x32-10 number for stream position offset + i under `seed`,
  // so the same (seed, offset) gives the same values on every device and for any split of x.
  virtual void fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                            float lo, float hi) = 0;
  virtual void fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                           float mean, float stddev) = 0;

  // --- layer ops --- (arguments and semantics in cohort/core/layer_args.hpp; the front end that
  // checks tensors and calls these is cohort/core/layer_ops.hpp). Pointers are this device's
  // memory covering exactly the extents in the args. Ops named *_grad or *_backward_filter and
  // every parameter-gradient output (dw, dbias, dgamma, dbeta) ACCUMULATE (+=), as parameter
  // gradients do across a backward pass; every other output is overwritten. Nullable pointers say
  // so. The defaults throw cohort::Error naming the device and the op: a backend overrides what its
  // supports() claims.
  virtual void conv2d_forward(const Conv2dArgs& a, const float* x, const float* w,
                              const float* bias /*nullable*/, float* y);
  virtual void conv2d_backward_data(const Conv2dArgs& a, const float* dy, const float* w, float* dx);
  virtual void conv2d_backward_filter(const Conv2dArgs& a, const float* x, const float* dy,
                                      float* dw, float* dbias /*nullable*/);
  // argmax (max pooling, nullable): per output, the flat index ih * w + iw of the winner in its
  // input plane, for pool2d_backward.
  virtual void pool2d_forward(const Pool2dArgs& a, const float* x, float* y, std::int32_t* argmax);
  virtual void pool2d_backward(const Pool2dArgs& a, const float* dy, const std::int32_t* argmax,
                               float* dx);
  virtual void activation_forward(Activation f, float alpha, const float* x, float* y,
                                  std::size_t n);
  // Reads x (leaky_relu, gelu) or y (relu, sigmoid, tanh), the forward's input and output.
  virtual void activation_backward(Activation f, float alpha, const float* x, const float* y,
                                   const float* dy, float* dx, std::size_t n);
  virtual void bias_add(const ChannelDims& d, const float* bias, float* y, Activation f,
                        float alpha);
  virtual void bias_grad(const ChannelDims& d, const float* dy, float* dbias);
  // Along `channels` of [outer, channels, inner]; log selects log-softmax. Backward reads y.
  virtual void softmax_forward(bool log, const ChannelDims& d, const float* x, float* y);
  virtual void softmax_backward(bool log, const ChannelDims& d, const float* y, const float* dy,
                                float* dx);
  // Writes save_mean / save_invstd [c] (the statistics used: the batch's when training, else the
  // running ones) for backward; updates running_mean / running_var (nullable) when training.
  // gamma / beta nullable (1 and 0).
  virtual void batch_norm_forward(const BatchNormArgs& a, const float* x, const float* gamma,
                                  const float* beta, float* running_mean, float* running_var,
                                  float* y, float* save_mean, float* save_invstd);
  virtual void batch_norm_backward(const BatchNormArgs& a, const float* x, const float* dy,
                                   const float* gamma, const float* save_mean,
                                   const float* save_invstd, float* dx /*nullable*/,
                                   float* dgamma /*nullable*/, float* dbeta /*nullable*/);
  virtual void layer_norm_forward(const LayerNormArgs& a, const float* x, const float* gamma,
                                  const float* beta, float* y, float* save_mean,
                                  float* save_rstd);
  virtual void layer_norm_backward(const LayerNormArgs& a, const float* x, const float* dy,
                                   const float* gamma, const float* save_mean,
                                   const float* save_rstd, float* dx /*nullable*/,
                                   float* dgamma /*nullable*/, float* dbeta /*nullable*/);
  virtual void dropout_forward(const DropoutArgs& a, const float* x, float* y, std::size_t n);
  virtual void dropout_backward(const DropoutArgs& a, const float* dy, float* dx, std::size_t n);
  // Class-index losses over logp [rows, classes] and target [rows] (i64, each in [0, classes):
  // the front end checks). nll_forward writes one loss per row.
  virtual void nll_forward(const float* logp, const std::int64_t* target, std::size_t rows,
                           std::size_t classes, float* loss);
  virtual void nll_backward(const std::int64_t* target, std::size_t rows, std::size_t classes,
                            float scale, float* dx);
  virtual void cross_entropy_backward(const float* logp, const std::int64_t* target,
                                      std::size_t rows, std::size_t classes, float scale,
                                      float* dx);
  // --- end of layer ops ---

  // --- optimizer ops ---
  // One fused update of one parameter tensor of n elements and its optimizer state, in place; the
  // per-element math (PyTorch 1.13's order of operations) is cohort/detail/optim_kernels.hpp and
  // each args struct documents its formula (cohort/core/optim_args.hpp). A state pointer that the
  // args do not use (momentum_buffer when momentum == 0, max_exp_avg_sq without amsgrad, ...) may
  // be nullptr and is not touched. Called through cohort::ops::*_step (cohort/core/optim_ops.hpp).
  virtual void sgd_step(const SgdArgs& args, float* param, const float* grad,
                        float* momentum_buffer, std::size_t n) = 0;
  virtual void adam_step(const AdamArgs& args, float* param, const float* grad, float* exp_avg,
                         float* exp_avg_sq, float* max_exp_avg_sq, std::size_t n) = 0;
  virtual void adadelta_step(const AdadeltaArgs& args, float* param, const float* grad,
                             float* square_avg, float* acc_delta, std::size_t n) = 0;
  virtual void rmsprop_step(const RmspropArgs& args, float* param, const float* grad,
                            float* square_avg, float* grad_avg, float* momentum_buffer,
                            std::size_t n) = 0;
  // --- end of optimizer ops ---
};

// How a backend offers its devices to the registry (see backends/registry.cpp). The registry file
// lists one factory per backend, by hand, behind its build flag.
struct DeviceFactory {
  std::string name;  // "cuda", "host"
  int score = 0;     // higher wins when the user asks for the best available device
  // Number of devices of this kind usable now (0 when none); `why_not` explains a 0.
  std::function<int(std::string* why_not)> count;
  // The device with this index (0 <= index < count()); the factory owns it for the program's life.
  std::function<Device&(int index)> get;
};

// Picks a device from `factories` by spec: "" means the environment variable COHORT_DEVICE if set,
// else the best available (highest score with count() > 0). "NAME" means NAME:0; "NAME:i" the i-th.
// Unknown names, bad indices and unavailable devices throw cohort::Error listing what is known and,
// for an unavailable one, why.
Device& select_device(const std::vector<DeviceFactory>& factories, const std::string& spec);

}  // namespace cohort
