// Weights digests: one 64-bit FNV-1a over a model's state_dict (names, shapes, values read to
// the host), printed as 16 hex digits, and the all-gather that compares them across ranks.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cohort/parallel/ddp.hpp"
#include "digest.hpp"

namespace cohort::parallel {

std::string weights_digest(const nn::Module& model) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto& e : model.state_dict()) {
    h = detail::fnv1a(e.name.data(), e.name.size(), h);
    const std::string shape = e.tensor.shape().str();
    h = detail::fnv1a(shape.data(), shape.size(), h);
    std::vector<unsigned char> bytes(e.tensor.nbytes());
    e.tensor.device().copy_to_host(bytes.data(), e.tensor.raw(), bytes.size());
    h = detail::fnv1a(bytes.data(), bytes.size(), h);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string DistributedDataParallel::weights_digest() const {
  return parallel::weights_digest(*model_);
}

bool DistributedDataParallel::weights_identical_across_ranks() {
  const std::string d = weights_digest();
  const auto mine = static_cast<std::int64_t>(std::stoull(d, nullptr, 16));
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm_->size()));
  comm_->allgather(&mine, all.data(), 1, DType::i64)->wait();
  return std::all_of(all.begin(), all.end(), [&](std::int64_t x) { return x == mine; });
}

}  // namespace cohort::parallel
