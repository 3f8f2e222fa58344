// See cudnn_status.hpp. The NOT_SUPPORTED category is a range (cudnn_graph.h groups statuses by
// thousands: CUDNN_STATUS_FULL_ERROR_CODE(category, specific)), so a sub-code added in a later 9.x
// release inside 3000-3999 is declined too.
#include "cuda/seams/cudnn_status.hpp"

#include "cuda/seams/cudnn_values.hpp"

namespace cohort::cuda::seams {

StatusAction execute_status_action(int status) {
  if (status == cudnn_enum::kStatusSuccess) return StatusAction::done;
  if (status >= cudnn_enum::kStatusNotSupported && status < cudnn_enum::kStatusNotSupported + 1000)
    return StatusAction::decline;
  return StatusAction::fail;
}

StatusAction fused_status_action(int status) {
  if (status >= cudnn_enum::kStatusBadParam && status < cudnn_enum::kStatusBadParam + 1000)
    return StatusAction::decline;
  if (status >= cudnn_enum::kStatusInternalError && status < cudnn_enum::kStatusInternalError + 1000)
    return StatusAction::decline;
  return execute_status_action(status);
}

}  // namespace cohort::cuda::seams
