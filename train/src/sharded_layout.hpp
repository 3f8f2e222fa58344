// Which element ranges of each parameter every rank of a ZeRO run owns, and the optimizer's
// parameters by name: what a sharded checkpoint's save and load both map through (internal to
// train/; sharded_checkpoint.hpp has the contracts).
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/error.hpp"
#include "cohort/optim/optimizer.hpp"
#include "cohort/parallel/ddp.hpp"

namespace cohort::train::sharded {

using parallel::DistributedDataParallel;

// One parameter that requires a gradient, and which flat range of it each rank owns.
struct ParamLayout {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;  // per rank
  Tensor mine;   // flat: this rank's range of the values (stage 3: of the shard)
  Tensor whole;  // the parameter's value (stages 0-2, where every rank holds it whole)
};
// In registration order. Stage 0 (plain DDP): rank 0 owns every parameter whole.
std::vector<ParamLayout> layout_of(const DistributedDataParallel& ddp);

// The name of each of the optimizer's parameters (torch's numbering: over the groups in order);
// an optimizer parameter that is not the model's (stage 0) or not a shard_parameters() piece is
// an error naming `who`.
std::vector<std::string> slot_names(const DistributedDataParallel& ddp, const optim::Optimizer& opt,
                                    const std::vector<ParamLayout>& layout, const char* who);

// "state.<i>.<rest>" -> {i, rest}; false for other keys.
bool split_slot_key(const std::string& key, std::size_t* slot, std::string* rest);

// Runs fn on every rank; if it throws on any, every rank throws (the failing ones their own
// error, the others naming the highest failing rank). The collective is a barrier as well.
template <class F>
void agree(comm::Communicator& c, const std::string& what, F&& fn) {
  double failed = -1;  // the failing rank, as a max over ranks
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
    failed = c.rank();
  }
  if (c.size() > 1) comm::allreduce_host(c, nullptr, &failed, 1, DType::f64, comm::ReduceOp::max);
  if (error) std::rethrow_exception(error);
  COHORT_CHECK(failed < 0, what, ": rank ", static_cast<int>(failed),
               " failed (its own error says why)");
}

}  // namespace cohort::train::sharded
