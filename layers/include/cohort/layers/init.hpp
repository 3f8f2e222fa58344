// Parameter initialisation: PyTorch's default distributions drawn from cohort's seeded init
// stream. The stream is Philox4x32-10 under one seed with a running offset, so a model built in
// the same order after manual_seed(s) gets the same weights on every device and every run (the
// numbers differ from PyTorch's, whose generator is another; the distributions are the same).
#pragma once

#include <cstdint>

#include "cohort/core/tensor.hpp"

namespace cohort::nn {

// Restarts the init stream at `seed` (default 0 at program start). Thread-safe.
void manual_seed(std::uint64_t seed);

// U(lo, hi) of the given shape on `device`, drawn from the init stream (advancing it).
Tensor init_uniform(const Shape& shape, float lo, float hi, Device& device);

// A fresh 64-bit seed from the init stream, for modules that draw their own random numbers
// (Dropout).
std::uint64_t next_seed();

// PyTorch's kaiming_uniform_(w, a) for a weight with `fan_in` inputs per output:
// U(-b, b) with b = sqrt(6 / ((1 + a^2) fan_in)). Conv2d and Linear use a = sqrt(5), which makes
// b = 1 / sqrt(fan_in); their biases are U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
Tensor kaiming_uniform(const Shape& shape, double a, std::int64_t fan_in, Device& device);

// N(mean, stddev^2) of the given shape on `device`, drawn from the init stream (nn.init.normal_).
Tensor init_normal(const Shape& shape, float mean, float stddev, Device& device);

// PyTorch's trunc_normal_(w, mean, std, a, b): N(mean, stddev^2) restricted to [a, b] (absolute
// bounds, as PyTorch's, not multiples of stddev). Values outside are redrawn from the init stream
// (rejection: the exact truncated distribution); [a, b] must hold a reasonable share of the
// distribution (an interval far in a tail is an error rather than an endless loop).
Tensor init_trunc_normal(const Shape& shape, float mean, float stddev, float a, float b,
                         Device& device);

// PyTorch's xavier_uniform_(w, gain): U(-bound, bound), bound = gain * sqrt(6 / (fan_in +
// fan_out)), with PyTorch's fans for a weight [out, in, *kernel]: fan_in = in * prod(kernel),
// fan_out = out * prod(kernel). Shapes of rank >= 2.
Tensor xavier_uniform(const Shape& shape, Device& device, double gain = 1.0);

}  // namespace cohort::nn
