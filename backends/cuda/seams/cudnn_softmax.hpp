// The values of cuDNN's softmax calls (cudnnSoftmaxForward / Backward) as plain C++, checked on the
// CPU by tests/vendor against a reference of cuDNN's meaning: CHANNEL mode normalises over C for
// each (n, h, w) of [N, C, H, W]; cohort's [outer, channels, inner] is [outer, C, inner, 1].
// ACCURATE subtracts the maximum first; LOG gives log-softmax. y = alpha * softmax + beta * y.
#pragma once

#include "cohort/backend/op_calls.hpp"
#include "cuda/seams/cudnn_values.hpp"

namespace cohort::cuda::seams {

struct SoftmaxValues {
  bool covered = false;  // false: an extent beyond cuDNN's int descriptors (or < 1)
  Tensor4d t;            // x, y, dy, dx: [outer, channels, inner, 1]
  int algorithm = cudnn_enum::kSoftmaxAccurate;  // or kSoftmaxLog
  int mode = cudnn_enum::kSoftmaxModeChannel;
  float alpha = 1.0f, beta = 0.0f;  // y (dx) overwritten
};

SoftmaxValues softmax_values(bool log, const ChannelDims& d);

}  // namespace cohort::cuda::seams
