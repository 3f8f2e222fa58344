// What users of Horovod, Needle and PyTorch's hand-written data-parallel tutorial already know,
// as thin layers over cohort's own pieces. DistributedDataParallel is the recommended path
// (gradients averaged in buckets while backward still runs); these exist so a program ported from
// one of those APIs keeps its shape.
//
//   Horovod / tutorial                                cohort
//   hvd.broadcast_parameters(model.state_dict(), 0)   parallel::broadcast_parameters(model, comm)
//   hvd.DistributedOptimizer(opt)                     parallel::DistributedOptimizer dopt(opt, comm)
//   average_gradients(model)  (tutorial)              parallel::average_gradients(model, comm)
//   DataPartitioner(data, [0.7, 0.2, 0.1]).use(i)     data::partition(data, {0.7, 0.2, 0.1})[i]
//
// All of them are collectives: every rank calls them at the same point, and they block.
#pragma once

#include <memory>

#include "cohort/collectives/communicator.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/optim/optimizer.hpp"

namespace cohort::parallel {

// Copies `root`'s parameters and buffers (the whole state_dict) into every rank's `model`, with
// one broadcast. Every rank must hold the same architecture (names and shapes are checked:
// an error names the first differing entry and both shapes).
void broadcast_parameters(nn::Module& model, comm::Communicator& comm, int root = 0);

// Replaces every parameter's gradient by its average over the ranks, with one all-reduce of all
// gradients packed together (parameters without requires_grad are left alone).
void average_gradients(nn::Module& model, comm::Communicator& comm);

// Horovod's DistributedOptimizer: wraps an optimizer so that its step() first averages the
// gradients of every parameter it updates across the ranks (one all-reduce, packed), then
// updates. It installs a step pre-hook on `optimizer`, so the wrapped optimizer's own step()
// (the one a Trainer calls) averages too, for as long as this object lives.
class DistributedOptimizer {
 public:
  DistributedOptimizer(optim::Optimizer& optimizer, std::shared_ptr<comm::Communicator> comm);
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  void step() { opt_.step(); }           // average, then update; collective
  void zero_grad() { opt_.zero_grad(); }
  optim::Optimizer& optimizer() { return opt_; }
  comm::Communicator& communicator() { return *comm_; }

 private:
  optim::Optimizer& opt_;
  std::shared_ptr<comm::Communicator> comm_;
  int hook_ = -1;
};

}  // namespace cohort::parallel
