// What the nccl backend passes to NCCL for cohort's element types and reductions, as plain values
// in nccl.h's numbering. No NCCL or CUDA header is included, so the mapping is built with or
// without NCCL and the CPU test suite (tests/vendor) checks it against the numbers and semantics
// nccl.h documents; types.cpp converts these ints to ncclDataType_t / ncclRedOp_t and checks the
// numbering with static_asserts.
#pragma once

#include <cstddef>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/dtype.hpp"

namespace cohort::comm::nccl::seam {

// ncclDataType_t as nccl.h numbers it (the types cohort uses).
inline constexpr int kNcclUint8 = 1, kNcclInt32 = 2, kNcclInt64 = 4, kNcclFloat16 = 6,
                     kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9;
// ncclRedOp_t as nccl.h numbers it (the built-in operations cohort uses).
inline constexpr int kNcclSum = 0, kNcclMax = 2, kNcclMin = 3, kNcclAvg = 4;

struct NcclType {
  int type = -1;          // ncclDataType_t
  std::size_t size = 0;   // bytes per element, as NCCL counts them (count * size = bytes moved)
};

// Every DType has an NCCL counterpart (f32, f64, bf16, f16, i32, i64, u8); any other value
// throws cohort::Error naming it.
NcclType nccl_type(DType dt);

// sum, avg, min, max; any other value throws cohort::Error naming it. avg is ncclAvg, whose
// meaning NCCL defines per type: floating-point values are each multiplied by 1/n (the scalar
// rounded to the element type) and then summed; integers are summed (wrapping) and the sum
// divided by n with truncation toward zero. The latter is cohort's own integer avg; for floats
// the result is cohort's (sum, then divide) up to rounding, and exactly it when n is a power of
// two.
int nccl_op(ReduceOp op);

}  // namespace cohort::comm::nccl::seam
