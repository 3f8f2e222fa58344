// Choosing and creating a Communicator. Every backend built into this library is listed by hand
// in collectives/registry.cpp behind its build flag (nccl, ucx, shm, self: portable ones last).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/store.hpp"

namespace cohort::comm {

struct CommunicatorFactory {
  std::string name;  // "shm", "ucx", "nccl", "self"
  int score = 0;     // higher wins for "auto"
  // Whether this backend can serve this process group; `why_not` says why not.
  std::function<bool(const ProcessGroupInfo&, std::string* why_not)> available;
  std::function<std::unique_ptr<Communicator>(const ProcessGroupInfo&, std::shared_ptr<Store>)> create;
};

const std::vector<CommunicatorFactory>& communicator_factories();

// name: "shm" | "ucx" | "nccl" | "self" | "auto" | "" ("" reads COHORT_COMM, then auto).
// Throws cohort::Error for unknown names (listing the known ones) and unavailable backends (why).
std::unique_ptr<Communicator> create_communicator(const std::string& name,
                                                  const ProcessGroupInfo& info,
                                                  std::shared_ptr<Store> store);

// What a program calls (torch.distributed.init_process_group): the launcher's variables, a store
// at MASTER_ADDR:MASTER_PORT (or the launcher's equivalent), then create_communicator(name, ...).
// Shared, because DistributedDataParallel, DistributedOptimizer and the Trainer keep it too.
// One process without launcher variables gets "self" (or whatever `name`/COHORT_COMM name that
// works alone); naming a multi-process backend (shm, ucx, nccl) there is an error saying how to
// launch the ranks, instead of a silent one-rank run. Blocks until every rank has arrived.
std::shared_ptr<Communicator> init_process_group(const std::string& name = "");

}  // namespace cohort::comm
