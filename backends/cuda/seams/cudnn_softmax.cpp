// Plain-value seam of cuDNN's softmax (see cudnn_softmax.hpp); forward and backward share it.
#include "cuda/seams/cudnn_softmax.hpp"

#include <climits>
#include <cstdint>
#include <initializer_list>

namespace cohort::cuda::seams {

SoftmaxValues softmax_values(bool log, const ChannelDims& d) {
  SoftmaxValues v;
  for (std::int64_t x : {d.outer, d.channels, d.inner, d.numel()})
    if (x < 1 || x > INT_MAX) return v;
  v.covered = true;
  v.t = {static_cast<int>(d.outer), static_cast<int>(d.channels), static_cast<int>(d.inner), 1};
  v.algorithm = log ? cudnn_enum::kSoftmaxLog : cudnn_enum::kSoftmaxAccurate;
  v.mode = cudnn_enum::kSoftmaxModeChannel;
  v.alpha = 1.0f;
  v.beta = 0.0f;
  return v;
}

}  // namespace cohort::cuda::seams
