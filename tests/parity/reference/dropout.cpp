// Reference of dropout: the mask drawn from this library's own Philox4x32-10 (random.cpp) with
// the layout cohort documents for it (element i: lane i % 4 of counter block i / 4, the step in
// the counter's upper words, the seed as key), kept elements scaled by 1 / (1 - p). The scale is
// an f32, as ATen's mask is, so a kept element is one f32 product.
#include "reference.hpp"

namespace parity_ref {

std::vector<bool> dropout_keep(std::size_t n, double p, std::uint64_t seed, std::uint64_t step) {
  std::vector<bool> keep(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t block = i / 4;
    const auto r =
        philox4x32_10({static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                       static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(step >> 32)},
                      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
    keep[i] = static_cast<double>(r[i % 4] >> 8) / 16777216.0 >= p;
  }
  return keep;
}

Vec dropout(const Vec& x, float p, std::uint64_t seed, std::uint64_t step) {
  const std::vector<bool> keep = dropout_keep(x.size(), p, seed, step);
  const double scale = p < 1.0f ? f32(1.0 / (1.0 - static_cast<double>(p))) : 0.0;
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = keep[i] ? f32(x[i] * scale) : 0.0;
  return y;
}

}  // namespace parity_ref
