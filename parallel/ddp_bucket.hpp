// DistributedDataParallel's bucket (internal to cohort::parallel): shared by ddp.cpp (its life
// cycle) and zero.cpp (the sharded parameters and their all-gather).
#pragma once

#include <memory>
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
  std::unique_ptr<detail::Reducer> reducer;
  comm::WorkHandle work;
  double issue_t = 0, done_t = 0;
};

}  // namespace cohort::parallel
