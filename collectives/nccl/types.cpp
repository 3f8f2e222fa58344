// cohort's element types and reductions as NCCL names them. Every cohort::DType has an NCCL
// counterpart (f32, f64, bf16, f16, i32, i64, u8). A type without one (a future DType) is rejected
// naming it, before anything is enqueued.
#include "nccl/context.hpp"

namespace cohort::comm::nccl::detail {

ncclDataType_t nccl_dtype(DType dt) {
  switch (dt) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  COHORT_CHECK_IN(kName, false, "dtype ", static_cast<int>(dt),
                  " has no NCCL counterpart (the nccl backend moves f32, f64, bf16, f16, i32, i64, u8)");
  return ncclFloat32;
}

// avg is NCCL's own ncclAvg: floats are pre-multiplied by 1/n and summed; integers are summed
// (wrapping) and divided by n with truncation, which is cohort's definition of an integer avg.
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  COHORT_CHECK_IN(kName, false, "reduction ", static_cast<int>(op), " is not sum, avg, min or max");
  return ncclSum;
}

}  // namespace cohort::comm::nccl::detail
