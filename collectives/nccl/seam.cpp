// cohort's DType / ReduceOp to nccl.h's numbers (see seam.hpp). The only code between these values
// and NCCL is the cast in types.cpp.
#include "nccl/seam.hpp"

#include "cohort/core/error.hpp"

namespace cohort::comm::nccl::seam {

NcclType nccl_type(DType dt) {
  switch (dt) {
    case DType::f32: return {kNcclFloat32, 4};
    case DType::f64: return {kNcclFloat64, 8};
    case DType::bf16: return {kNcclBfloat16, 2};
    case DType::f16: return {kNcclFloat16, 2};
    case DType::i32: return {kNcclInt32, 4};
    case DType::i64: return {kNcclInt64, 8};
    case DType::u8: return {kNcclUint8, 1};
  }
  COHORT_CHECK_IN("nccl", false, "dtype ", static_cast<int>(dt),
                  " has no NCCL counterpart (the nccl backend moves f32, f64, bf16, f16, i32, i64, u8)");
  return {};
}

int nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return kNcclSum;
    case ReduceOp::avg: return kNcclAvg;
    case ReduceOp::min: return kNcclMin;
    case ReduceOp::max: return kNcclMax;
  }
  COHORT_CHECK_IN("nccl", false, "reduction ", static_cast<int>(op),
                  " is not sum, avg, min or max");
  return kNcclSum;
}

}  // namespace cohort::comm::nccl::seam
