// Tensor-level ops: argument checking with the values at fault, then dispatch to the op table of
// the tensors' device. Every op requires all tensors on the same device.
#pragma once

#include <cstdint>

#include "cohort/core/op_options.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::ops {

void fill(Tensor& x, double value);
// dst = src converted to dst's dtype (torch's dst.copy_(src) across dtypes): same numel, same
// device, floating-point dtypes only (f32, f64, bf16, f16); 16-bit results round to nearest even.
void cast(const Tensor& src, Tensor& dst);
// out = act(a + b), one pass (a residual block's sum and ReLU); act identity: out = a + b.
void add(const Tensor& a, const Tensor& b, Tensor& out, Activation act = Activation::identity,
         float act_alpha = 0.0f);
void sub(const Tensor& a, const Tensor& b, Tensor& out);  // out = a - b
void mul(const Tensor& a, const Tensor& b, Tensor& out);  // out = a * b (element-wise)
void axpy(float alpha, const Tensor& x, Tensor& y);       // y += alpha * x
void scale(float alpha, const Tensor& x, Tensor& out);    // out = alpha * x
// out = min(max(x, lo), hi) element-wise (torch.clamp; NaN stays NaN); lo <= hi. out may be x.
void clamp(const Tensor& x, float lo, float hi, Tensor& out);

// Reductions over the last dimension: x [..., C] -> out [...] (out has numel == x.numel() / C).
void reduce_sum(const Tensor& x, Tensor& out);     // accumulated in double
void reduce_sum_sq(const Tensor& x, Tensor& out);  // sum of squares, in double
void reduce_max(const Tensor& x, Tensor& out);     // NaN wins, as torch.max
void argmax(const Tensor& x, Tensor& out);         // out dtype i64; the first maximal column
// Fills x (f32) with Philox draws at stream positions offset .. offset + numel - 1 of `seed`:
// uniform in [lo, hi), or normal (Box-Muller). Tensor::uniform / Tensor::normal make a new tensor.
void fill_uniform(Tensor& x, float lo, float hi, std::uint64_t seed, std::uint64_t offset = 0);
void fill_normal(Tensor& x, float mean, float stddev, std::uint64_t seed, std::uint64_t offset = 0);

// The maximum of every element of x (NaN wins) into the one-element `out`, on x's device (no copy
// to the host). In stages over rows of at most 1024 elements, then the rows' maxima, and so on: a
// [1, n] reduce_max is one work item, on a GPU one thread reading all n elements. The result is
// exact, so the staging changes no value.
void max_all(const Tensor& x, Tensor& out);
// max |x| over every element into the one-element `out` (NaN wins; an inf gives inf): max_all of
// x and of -x, then the larger. The GradScaler's inf check and clip_grad_norm's infinity norm.
void max_abs_all(const Tensor& x, Tensor& out);

float sum(const Tensor& x);
float max(const Tensor& x);  // max_all, read back to the host

// C = alpha * op(A) @ op(B) + beta * C for 2-D tensors.
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c,
          float alpha = 1.0f, float beta = 0.0f);
// Returns op(A) @ op(B) as a new tensor.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// The same for 3-D tensors, one GEMM per leading index (torch.baddbmm / torch.bmm):
// C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i]; a, b, c share the batch extent.
void gemm_batched(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& c,
                  float alpha = 1.0f, float beta = 0.0f);
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

}  // namespace cohort::ops
