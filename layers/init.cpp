// Parameter initialisation (see init.hpp): the one process-wide init stream (seed and running
// offset behind a mutex; every draw reserves whole Philox blocks, so draws never overlap) and
// PyTorch's distributions drawn from it.
#include "cohort/layers/init.hpp"

#include <cmath>
#include <mutex>
#include <vector>

#include "cohort/core/rng.hpp"

namespace cohort::nn {
namespace {

struct InitStream {
  std::mutex mu;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;  // next stream position; kept a multiple of 4 (one Philox block)
};

InitStream& stream() {
  static InitStream* s = new InitStream();  // never destroyed: usable from static destructors
  return *s;
}

// Reserves n positions of the stream and returns (seed, first position).
std::pair<std::uint64_t, std::uint64_t> reserve(std::uint64_t n) {
  InitStream& s = stream();
  std::lock_guard<std::mutex> lock(s.mu);
  const std::uint64_t at = s.offset;
  s.offset += (n + 3) / 4 * 4;
  return {s.seed, at};
}

}  // namespace

void manual_seed(std::uint64_t seed) {
  InitStream& s = stream();
  std::lock_guard<std::mutex> lock(s.mu);
  s.seed = seed;
  s.offset = 0;
}

Tensor init_uniform(const Shape& shape, float lo, float hi, Device& device) {
  const auto [seed, at] = reserve(static_cast<std::uint64_t>(shape.numel()));
  return Tensor::uniform(shape, lo, hi, seed, device, at);
}

std::uint64_t next_seed() {
  const auto [seed, at] = reserve(4);
  const rng::U32x4 r = rng::philox_block(seed, at / 4);
  return (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
}

Tensor kaiming_uniform(const Shape& shape, double a, std::int64_t fan_in, Device& device) {
  COHORT_CHECK(fan_in > 0, "kaiming_uniform: fan_in must be positive, got ", fan_in,
               " for shape ", shape);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const float bound = static_cast<float>(gain * std::sqrt(3.0 / static_cast<double>(fan_in)));
  return init_uniform(shape, -bound, bound, device);
}

Tensor init_normal(const Shape& shape, float mean, float stddev, Device& device) {
  const auto [seed, at] = reserve(static_cast<std::uint64_t>(shape.numel()));
  return Tensor::normal(shape, mean, stddev, seed, device, at);
}

Tensor init_trunc_normal(const Shape& shape, float mean, float stddev, float a, float b,
                         Device& device) {
  COHORT_CHECK(stddev > 0.0f && a < b, "trunc_normal: needs stddev > 0 and a < b, got stddev ",
               stddev, ", [", a, ", ", b, "]");
  const std::int64_t n = shape.numel();
  auto draw = [&]() {
    return init_normal(Shape{n}, mean, stddev, device).to_vector<float>();
  };
  std::vector<float> v = draw(), spare;
  std::size_t next = 0;
  int refills = 0;
  for (float& x : v)
    while (!(x >= a && x <= b)) {
      if (next == spare.size()) {
        COHORT_CHECK(++refills <= 64, "trunc_normal: [", a, ", ", b, "] holds too little of N(",
                     mean, ", ", stddev, "^2) to sample by rejection");
        spare = draw();
        next = 0;
      }
      x = spare[next++];
    }
  return Tensor::from_vector(v, shape, device);
}

Tensor xavier_uniform(const Shape& shape, Device& device, double gain) {
  COHORT_CHECK(shape.rank() >= 2, "xavier_uniform: needs a weight of rank >= 2, got ", shape);
  std::int64_t receptive = 1;
  for (std::size_t i = 2; i < shape.rank(); ++i) receptive *= shape[static_cast<int>(i)];
  const double fan_in = static_cast<double>(shape[1] * receptive);
  const double fan_out = static_cast<double>(shape[0] * receptive);
  COHORT_CHECK(fan_in + fan_out > 0, "xavier_uniform: empty weight ", shape);
  const float bound = static_cast<float>(gain * std::sqrt(6.0 / (fan_in + fan_out)));
  return init_uniform(shape, -bound, bound, device);
}

}  // namespace cohort::nn
