// The options the op front ends take (cohort/core/layer_ops.hpp) and the layers pass on: which
// activation, which pooling, the dropout draw, and the output-extent rule of convolution and
// pooling windows. Part of the user API; the call structs that carry them to a device are in the
// backend set (cohort/backend/layer_args.hpp, op_calls.hpp).
#pragma once

#include <cstdint>

namespace cohort {

// Element-wise activation functions (the math is in backends/common/ops/activation.hpp).
//   relu(x) = max(x, 0)                  leaky_relu(x) = x > 0 ? x : alpha x
//   gelu(x) = x Phi(x) (exact, erf)      sigmoid(x) = 1 / (1 + e^-x)       tanh(x)
enum class Activation : int { identity, relu, leaky_relu, gelu, sigmoid, tanh };
const char* activation_name(Activation f);

// Output extent of a convolution or pooling window along one axis (stride >= 1, dil >= 1); 0 when
// the (dilated) window does not fit in the padded input.
inline std::int64_t conv_out_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                  std::int64_t pad, std::int64_t dil) {
  const std::int64_t span = in + 2 * pad - dil * (kernel - 1) - 1;  // floor division below
  return span < 0 ? 0 : span / stride + 1;
}

enum class PoolKind : int { max, avg };

// Inverted dropout: element i is kept with probability 1 - p and scaled by 1 / (1 - p). Whether it
// is kept is a pure function of (seed, step, i) (Philox4x32-10), so backward regenerates the mask
// instead of storing it, and every device draws the same mask.
struct DropoutArgs {
  float p = 0.5f;
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
};

}  // namespace cohort
