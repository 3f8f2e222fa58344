// The host's activation family (activation.cpp): activation_forward / activation_backward on a
// range of elements, through the span loops built per instruction set (activation_spans.hpp).
// Internal header.
#pragma once

#include <cstdint>

#include "cohort/backend/op_calls.hpp"

namespace cohort::host {

// Elements [begin, end) of the call.
void activation_forward_range(const calls::ActivationForward& c, std::int64_t begin,
                              std::int64_t end);
void activation_backward_range(const calls::ActivationBackward& c, std::int64_t begin,
                               std::int64_t end);

// bias_add's items [begin, end): (outer, channel) planes of `inner` elements, or (inner == 1)
// rows of `channels`.
void bias_add_planes(const calls::BiasAdd& c, std::int64_t begin, std::int64_t end);
void bias_add_rows(const calls::BiasAdd& c, std::int64_t begin, std::int64_t end);

// bias_act_backward with inner == 1 ([rows, channels]): items [begin, end) of
// bias_act_grad_block_count(c), each a block of neighbouring channels over every row.
void bias_act_grad_blocks(const calls::BiasActBackward& c, std::int64_t begin, std::int64_t end);
std::int64_t bias_act_grad_block_count(const calls::BiasActBackward& c);

}  // namespace cohort::host
