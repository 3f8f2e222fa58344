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
#include "cohort/core/device.hpp"

namespace cohort::comm {

struct CommunicatorFactory {
  std::string name;  // "shm", "ucx", "nccl", "self"
  int score = 0;     // higher wins for "auto"
  // Takes GPU memory only (nccl): "auto" picks it, where it can serve the group, for a program
  // that trains on a GPU (the `device` of init_process_group), and never for one that trains on
  // the host, whose host buffers it would refuse.
  bool gpu_memory = false;
  // Whether this backend can serve this process group; `why_not` says why not.
  std::function<bool(const ProcessGroupInfo&, std::string* why_not)> available;
  // Whether "auto" may pick it for this group (null: whenever available). hier: only for a job
  // that spans several hosts with several ranks on this one; by name it serves any group.
  std::function<bool(const ProcessGroupInfo&)> auto_ok;
  std::function<std::unique_ptr<Communicator>(const ProcessGroupInfo&, std::shared_ptr<Store>)> create;
};

const std::vector<CommunicatorFactory>& communicator_factories();

// What "auto" means (PyTorch's "cuda:nccl,cpu:gloo" default, as one choice): for GPU training
// (`gpu_training`) the best-scored available gpu_memory backend, i.e. nccl when every rank has a
// GPU of its own; otherwise, or when none is available, the best-scored available other
// backend. nullptr when none is; `reasons` (optional) gets "name: why" for each unavailable one.
const CommunicatorFactory* pick_auto(const std::vector<CommunicatorFactory>& factories,
                                     const ProcessGroupInfo& info, bool gpu_training,
                                     std::string* reasons = nullptr);

// name: "shm" | "ucx" | "hier" | "nccl" | "self" | "auto" | "" ("" reads COHORT_COMM, then auto).
// `device`: the device the program trains on (nullptr: the host), which "auto" goes by.
// Throws cohort::Error for unknown names (listing the known ones) and unavailable backends (why).
std::unique_ptr<Communicator> create_communicator(const std::string& name,
                                                  const ProcessGroupInfo& info,
                                                  std::shared_ptr<Store> store,
                                                  const Device* device = nullptr);

// The job's rendezvous store as the launcher describes it: COHORT_STORE (tcp://HOST:PORT or
// file:///DIR), else MASTER_ADDR:MASTER_PORT. Rank 0 serves a tcp store unless
// COHORT_STORE_SERVED=1 says the launcher does (cohortrun --elastic: the store must outlive any
// rank). Throws naming what is missing.
std::shared_ptr<Store> connect_job_store(const ProcessGroupInfo& info);

// What a program calls (torch.distributed.init_process_group): the launcher's variables, a store
// at MASTER_ADDR:MASTER_PORT (or the launcher's equivalent), then create_communicator(name, ...).
// Shared, because DistributedDataParallel, DistributedOptimizer and the Trainer keep it too.
// One process without launcher variables gets "self" (or whatever `name`/COHORT_COMM name that
// works alone); naming a multi-process backend (shm, ucx, nccl) there is an error saying how to
// launch the ranks, instead of a silent one-rank run. `device`: the device the program trains on
// (nullptr: the host); with "auto", training on a GPU picks nccl where every rank has its own GPU.
// Blocks until every rank has arrived.
std::shared_ptr<Communicator> init_process_group(const std::string& name = "",
                                                 const Device* device = nullptr);

}  // namespace cohort::comm
