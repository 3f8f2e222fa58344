// SyntheticDataset: deterministic samples from a seed (a label-dependent template plus noise),
// computed on get(), for tests and benchmarks that need data without files.
#include "cohort/data/synthetic.hpp"

#include <sstream>

#include "cohort/core/error.hpp"
#include "cohort/core/rng.hpp"

namespace cohort::data {

SyntheticDataset::SyntheticDataset(std::int64_t size, Shape sample_shape, std::int64_t num_classes,
                                   std::uint64_t seed)
    : n_(size), classes_(num_classes), shape_(std::move(sample_shape)), seed_(seed) {
  COHORT_CHECK(size >= 0, "SyntheticDataset: size ", size, " is negative");
  COHORT_CHECK(num_classes >= 1, "SyntheticDataset: num_classes ", num_classes, " must be >= 1");
  COHORT_CHECK(shape_.rank() == 3 && shape_.numel() > 0, "SyntheticDataset: sample shape must be ",
               "[C, H, W] with no zero extent, got ", shape_.str());
}

std::int64_t SyntheticDataset::get(std::int64_t index, float* out) const {
  COHORT_CHECK(index >= 0 && index < n_, "SyntheticDataset: index ", index, " out of range [0, ",
               n_, ")");
  const auto numel = static_cast<std::uint64_t>(shape_.numel());
  // Stream layout under seed_: position `index` picks the label; each class template and each
  // sample's noise use their own keys derived from the seed, so samples are independent.
  const rng::U32x4 r = rng::philox_block(seed_, static_cast<std::uint64_t>(index));
  const std::int64_t label = static_cast<std::int64_t>(r.v[0] % static_cast<std::uint32_t>(classes_));
  const std::uint64_t tmpl_seed =
      seed_ ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(label + 1));
  const std::uint64_t noise_at = static_cast<std::uint64_t>(index) * numel;
  for (std::uint64_t i = 0; i < numel; ++i)
    out[i] = 0.5f * rng::uniform_at(tmpl_seed, i, 0.0f, 1.0f) +
             0.5f * rng::uniform_at(~seed_, noise_at + i, 0.0f, 1.0f);
  return label;
}

std::string SyntheticDataset::describe() const {
  std::ostringstream os;
  os << "synthetic (" << n_ << " x " << shape_.str() << ", " << classes_ << " classes, seed "
     << seed_ << ")";
  return os.str();
}

}  // namespace cohort::data
