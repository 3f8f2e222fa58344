// The host's convolution family: oneDNN's primitives (conv2d.cpp says how and why). Internal
// header, free of oneDNN types. Each entry point returns false, having done nothing, when the case
// is left to the shared per-image im2col + GEMM path: COHORT_HOST_CONV=im2col, an empty extent, a
// shape oneDNN has no primitive for, or (backward filter) deterministic_algorithms().
#pragma once

#include "cohort/backend/op_calls.hpp"

namespace cohort::host {

enum class ConvPath { onednn, im2col };
// COHORT_HOST_CONV read once: onednn (default, also "auto") or im2col; anything else is an error
// naming the variable.
ConvPath conv_path();

// Under autocast (c.a.compute bf16) the entry points read their inputs as bf16 and write f32; a
// case that cannot (no native bf16, f16, COHORT_HOST_CONV=im2col, deterministic backward filter,
// no oneDNN primitive) gives the autocast notice once and computes in f32.
// y = conv(x, w) + bias: the activation c.a.act is left to the caller.
bool onednn_conv_forward(const calls::Conv2dForward& c);
// dx = conv^T(dy, w); false (the per-image path) also for 4 or fewer input channels per group.
bool onednn_conv_backward_data(const calls::Conv2dBackwardData& c);
// dw += dy (*) x; c.dbias is the caller's.
bool onednn_conv_backward_filter(const calls::Conv2dBackwardFilter& c);

// The oneDNN algorithm the forward of `a` runs with: "winograd" or "direct" (COHORT_HOST_CONV_ALGO
// asks; oneDNN may refuse Winograd for a shape or an ISA), "" when oneDNN has no primitive.
const char* onednn_conv_algorithm(const Conv2dArgs& a);

}  // namespace cohort::host
