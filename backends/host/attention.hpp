// The host's attention family (attention.cpp): per head through oneDNN's sgemm, the heads split
// between OpenMP threads. Internal header, free of oneDNN types.
#pragma once

#include "cohort/backend/op_calls.hpp"

namespace cohort::host {

// The call's heads split between `threads` OpenMP threads (1: all on the calling thread).
void attention_forward_heads(const calls::AttentionForward& c, int threads);
void attention_backward_heads(const calls::AttentionBackward& c, int threads);

}  // namespace cohort::host
