// Tensor-level ops: argument checking with the values at fault, then dispatch to the op table of
// the tensors' device. Every op requires all tensors on the same device.
#pragma once

#include "cohort/core/tensor.hpp"

namespace cohort::ops {

void fill(Tensor& x, double value);
// dst = src converted to dst's dtype (torch's dst.copy_(src) across dtypes): same numel, same
// device, floating-point dtypes only (f32, f64, bf16, f16); 16-bit results round to nearest even.
void cast(const Tensor& src, Tensor& dst);
void add(const Tensor& a, const Tensor& b, Tensor& out);  // out = a + b
void sub(const Tensor& a, const Tensor& b, Tensor& out);  // out = a - b
void mul(const Tensor& a, const Tensor& b, Tensor& out);  // out = a * b (element-wise)
void axpy(float alpha, const Tensor& x, Tensor& y);       // y += alpha * x
void scale(float alpha, const Tensor& x, Tensor& out);    // out = alpha * x

// Reductions over the last dimension: x [..., C] -> out [...] (out has numel == x.numel() / C).
void sum_last(const Tensor& x, Tensor& out);
void max_last(const Tensor& x, Tensor& out);
void argmax_last(const Tensor& x, Tensor& out);  // out dtype i64
// Whole-tensor reductions, returned to the host (synchronises).
float sum(const Tensor& x);
float max(const Tensor& x);

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
