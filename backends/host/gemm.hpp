// The host's GEMM family (gemm.cpp): oneDNN's sgemm, kept in one room so the BLAS choice is one
// file. Internal header, free of oneDNN types.
#pragma once

#include "cohort/backend/op_calls.hpp"

namespace cohort::host {

// c = alpha op(a) op(b) + beta c, row-major; every extent may be 0 (k == 0 scales c by beta).
void sgemm(const GemmArgs& g);
// The batch split between `threads` OpenMP threads (threads >= 2), one sgemm per batch entry.
void sgemm_batched(const calls::GemmBatched& c, int threads);

}  // namespace cohort::host
