// The host's GEMM family (gemm.cpp): oneDNN's sgemm, kept in one room so the BLAS choice is one
// file. Internal header, free of oneDNN types.
#pragma once

#include "cohort/backend/op_calls.hpp"

namespace cohort::host {

// c = alpha op(a) op(b) + beta c, row-major; every extent may be 0 (k == 0 scales c by beta).
// Under autocast bf16 (g.compute) through a oneDNN bf16 matmul (gemm.cpp).
void sgemm(const GemmArgs& g);
// Under autocast bf16 (c.compute): the whole batch as one oneDNN bf16 matmul; true when done,
// false for the f32 paths (after the autocast notice where bf16 cannot run).
bool bf16_batched(const calls::GemmBatched& c);
// The batch split between `threads` OpenMP threads (threads >= 2), one sgemm per batch entry.
void sgemm_batched(const calls::GemmBatched& c, int threads);

}  // namespace cohort::host
