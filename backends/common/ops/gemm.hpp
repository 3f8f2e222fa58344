// GEMM family: gemm and gemm_batched. The product itself is always the executor's gemm() (oneDNN
// on the host: backends/host/gemm.cpp; cuBLAS: backends/cuda/gemm.cpp); here are the edge cases
// every backend shares (an empty product, k == 0) and the batched loop a backend without a batched
// GEMM runs.
#pragma once

#include <cstdint>

#include "cohort/backend/op_calls.hpp"
#include "common/ops/common.hpp"

namespace cohort::kernels {

struct ScaleRowItem {  // item: row of a strided matrix; beta == 0 writes zeros (NaN does not survive)
  float* c;
  i64 cols, ldc;
  float beta;
  i64 cost() const { return cols; }
  COHORT_HD void operator()(i64 r) const {
    for (i64 j = 0; j < cols; ++j) c[r * ldc + j] = beta == 0.0f ? 0.0f : beta * c[r * ldc + j];
  }
};

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

}  // namespace cohort::kernels
