// cohort's element types and reductions as NCCL types: the plain values of seam.cpp (checked on
// the CPU by tests/vendor) cast to nccl.h's enums, whose numbering is checked here.
#include "nccl/context.hpp"
#include "nccl/seam.hpp"

namespace cohort::comm::nccl::detail {

static_assert(ncclUint8 == seam::kNcclUint8 && ncclInt32 == seam::kNcclInt32 &&
                  ncclInt64 == seam::kNcclInt64 && ncclFloat16 == seam::kNcclFloat16 &&
                  ncclFloat32 == seam::kNcclFloat32 && ncclFloat64 == seam::kNcclFloat64 &&
                  ncclBfloat16 == seam::kNcclBfloat16,
              "nccl/seam.hpp numbers ncclDataType_t as nccl.h does");
static_assert(ncclSum == seam::kNcclSum && ncclMax == seam::kNcclMax &&
                  ncclMin == seam::kNcclMin && ncclAvg == seam::kNcclAvg,
              "nccl/seam.hpp numbers ncclRedOp_t as nccl.h does");

ncclDataType_t nccl_dtype(DType dt) {
  return static_cast<ncclDataType_t>(seam::nccl_type(dt).type);
}

ncclRedOp_t nccl_op(ReduceOp op) { return static_cast<ncclRedOp_t>(seam::nccl_op(op)); }

}  // namespace cohort::comm::nccl::detail
