// DistributedDataParallel's bucket and ZeRO stage 3's unit (internal to cohort::parallel): shared
// by ddp.cpp (the bucket life cycle), zero.cpp (the sharded parameters and their all-gather) and
// zero3.cpp (the units' gather and release).
#pragma once

#include <cstdint>

#include <memory>
#include <string>
#include <vector>

#include "cohort/parallel/ddp.hpp"
#include "reducer.hpp"

namespace cohort::parallel {

struct DistributedDataParallel::Bucket {
  std::vector<int> members;  // indices into params_, in the order they fill the flat buffer
  std::int64_t numel = 0;   // f32 elements of its flat buffer, alignment padding included
  int pending = 0;          // members whose gradient is not final yet this step
  std::vector<char> ready;  // per member, this step
  bool launched = false, done = false;
  bool completed = false;   // stage 2 completes a bucket as soon as it is done (poll)
  // Its members' device (noted at construction: at stage 3 the values are released later).
  Device* device = nullptr;
  std::unique_ptr<detail::Reducer> reducer;
  comm::WorkHandle work;
  double issue_t = 0, done_t = 0;
};

// Stage 3: a module whose trainable parameters are gathered together (bucket `bucket` holds
// exactly them, in its layout). Between uses only `shard`, this rank's chunk of the values,
// exists; `gathered` is the whole bucket's values from gather_unit() to release_unit().
struct DistributedDataParallel::Unit {
  nn::Module* module = nullptr;  // nullptr: the root unit (the parameters outside every unit)
  std::string path;
  std::vector<int> members;  // indices into params_, in bucket order
  int bucket = 0;
  Tensor shard;     // n > 1: chunk-sized, persistent; n == 1: the whole bucket, the values' home
  Tensor gathered;  // n > 1, while gathering or alive
  comm::WorkHandle work;      // the all-gather in flight
  std::int64_t issue_us = 0;  // when it was issued (trace clock): its "allgather unit" span
  enum class State { released, gathering, alive } state = State::released;
};

}  // namespace cohort::parallel
