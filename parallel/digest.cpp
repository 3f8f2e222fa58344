// Weights digests (nn::state_digest: FNV-1a over a model's state_dict, 16 hex digits) and the
// all-gather that compares them across ranks.
#include <algorithm>
#include <vector>

#include "cohort/parallel/ddp.hpp"
#include "cohort/core/hash.hpp"
#include "cohort/collectives/host_collectives.hpp"

namespace cohort::parallel {

std::string weights_digest(const nn::Module& model) { return nn::state_digest(model); }

std::string DistributedDataParallel::weights_digest() const {
  // Stage 3 gathers the model to read it (collective); the gathered values are not written back.
  const FullParams whole = const_cast<DistributedDataParallel*>(this)->summon_full_params(false);
  return parallel::weights_digest(*model_);
}

bool DistributedDataParallel::weights_identical_across_ranks() {
  const std::string d = weights_digest();
  const auto mine = static_cast<std::int64_t>(std::stoull(d, nullptr, 16));
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm_->size()));
  with_context("DistributedDataParallel::weights_identical_across_ranks (all-gather of the "
               "weights digests)",
               [&] {
                 comm::allgather_host(*comm_, model_->device(), &mine, all.data(), 1, DType::i64);
               });
  return std::all_of(all.begin(), all.end(), [&](std::int64_t x) { return x == mine; });
}

}  // namespace cohort::parallel
