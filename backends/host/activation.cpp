// The activation family on the host: the shared element functions (common/ops/activation.hpp) in
// span loops built for AVX-512, AVX2 and the baseline (activation_spans.hpp says why, and why the
// results are the same bits on every CPU and the same as the shared kernels').
#include "activation.hpp"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define COHORT_ACTIVATION_SPANS \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#include "activation_spans.hpp"

namespace cohort::host {

void activation_forward_range(const calls::ActivationForward& c, std::int64_t begin,
                              std::int64_t end) {
  activation_forward_span(c.f, c.alpha, c.x + begin, c.y + begin, end - begin);
}

void activation_backward_range(const calls::ActivationBackward& c, std::int64_t begin,
                               std::int64_t end) {
  activation_backward_span(c.f, c.alpha, c.x ? c.x + begin : nullptr, c.y ? c.y + begin : nullptr,
                           c.dy + begin, c.dx + begin, end - begin);
}

void bias_add_planes(const calls::BiasAdd& c, std::int64_t begin, std::int64_t end) {
  for (std::int64_t plane = begin; plane < end; ++plane)
    bias_act_plane_span(c.f, c.alpha, c.bias ? c.bias[plane % c.d.channels] : 0.0f,
                        c.y + plane * c.d.inner, c.d.inner);
}

void bias_add_rows(const calls::BiasAdd& c, std::int64_t begin, std::int64_t end) {
  for (std::int64_t row = begin; row < end; ++row)
    bias_act_row_span(c.f, c.alpha, c.bias, c.y + row * c.d.channels, c.d.channels);
}

void bias_act_grad_blocks(const calls::BiasActBackward& c, std::int64_t begin, std::int64_t end) {
  const auto at = [](const float* p, std::int64_t off) { return p ? p + off : nullptr; };
  for (std::int64_t block = begin; block < end; ++block) {
    const std::int64_t c0 = block * kGradColumns;
    const std::int64_t n = std::min(kGradColumns, c.d.channels - c0);
    double acc[kGradColumns] = {};
    bias_act_grad_columns_span(c.f, c.alpha, at(c.x, c0), at(c.y, c0), c.dy + c0, c.dx + c0,
                               c.d.outer, c.d.channels, n, acc);
    for (std::int64_t k = 0; k < n; ++k) c.dbias[c0 + k] += static_cast<float>(acc[k]);
  }
}

std::int64_t bias_act_grad_block_count(const calls::BiasActBackward& c) {
  return (c.d.channels + kGradColumns - 1) / kGradColumns;
}

}  // namespace cohort::host
