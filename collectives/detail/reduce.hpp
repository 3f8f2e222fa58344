// Element-wise reductions shared by every communicator backend (shm, self, ucx, ...). Written once
// here so that every backend computes bit-identical results for the same inputs in the same order.
//
// Semantics, for every dtype the reductions accept (f32, f64, bf16, f16, i32, i64, u8):
//  - sum: integers wrap (two's complement, like NCCL); floats add in their own precision, except
//    bf16 and f16, which are widened to float, combined in float and rounded back to nearest-even
//    (f16 sums beyond 65504 become infinity).
//  - min / max: NaN handling is unspecified (the comparison is a plain `<`).
//  - avg: the sum, then divided by `world` (integers: truncating division of the wrapped sum).
//    reduce_sources() divides before its single rounding; reduce_into() treats avg as sum and the
//    caller finishes with finish_avg() once, after the last reduce_into().
//  - bf16 / f16 rounding: reduce_sources() rounds once per output element; a chain of reduce_into()
//    calls rounds after every step. Both are deterministic, so all ranks agree as long as they
//    use the same algorithm.
// Pointers are host memory. count == 0 is allowed (pointers may then be null).
#pragma once

#include <cstddef>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/dtype.hpp"

namespace cohort::comm::detail {

// True for the dtypes the reductions accept (all of them today); the list Capabilities reports.
bool reducible(DType dtype);
std::vector<DType> reducible_dtypes();

// dst[i] = dst[i] op src[i]. avg acts as sum (call finish_avg() at the end). dst and src may be
// the same pointer; partial overlap is not allowed.
void reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op);

// buf[i] = buf[i] / world, after the sum of an avg reduction.
void finish_avg(void* buf, std::size_t count, DType dtype, int world);

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc-1][i], combined left to right in one pass
// over memory; with op == avg the sum is divided by `world` before the result is stored. If dst2
// is not null the result is written there as well (saves a second pass when a backend needs the
// result in two places). dst and dst2 may be the same pointer as any source (exact aliasing, as
// for in-place collectives); partial overlap is not allowed. nsrc >= 1.
void reduce_sources(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count,
                    DType dtype, ReduceOp op, int world);

}  // namespace cohort::comm::detail
