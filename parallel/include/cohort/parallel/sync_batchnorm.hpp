// Synchronised batch norm (torch.nn.SyncBatchNorm): BatchNorm2d whose training statistics are
// those of the global batch over a communicator's ranks (nn::BatchNorm2d::set_sync_group says
// how). convert_sync_batchnorm turns every BatchNorm2d of a model into one, as PyTorch's
// SyncBatchNorm.convert_sync_batchnorm does: the model's structure, state_dict keys and values
// stay as they are, only the training statistics change. DistributedDataParallel::rebind (an
// elastic group change) moves the synchronised layers of its model onto the new group.
#pragma once

#include <memory>

#include "cohort/collectives/communicator.hpp"
#include "cohort/layers/batchnorm.hpp"

namespace cohort::parallel {

// The group a synchronised batch norm all-reduces over: `comm`'s ranks (f64 sums; every rank of
// comm must run the same layers in the same order, as it does in data-parallel training).
std::shared_ptr<nn::BatchNormGroup> batch_norm_group(std::shared_ptr<comm::Communicator> comm);

// Every BatchNorm2d in `model`'s tree synchronised over `comm`; returns how many. With a
// communicator of one rank they stay plain batch norm (nothing to synchronise) and the count is
// still returned. Call it on every rank, before wrapping the model in DDP.
int convert_sync_batchnorm(nn::Module& model, std::shared_ptr<comm::Communicator> comm);

// The batch norms of `model` that are synchronised, moved onto `comm` (DDP::rebind calls it).
void rebind_sync_batchnorm(nn::Module& model, std::shared_ptr<comm::Communicator> comm);

}  // namespace cohort::parallel

namespace cohort::nn {

// A BatchNorm2d made synchronised over `comm` (torch.nn.SyncBatchNorm(num_features, ...,
// process_group)); the same parameters, buffers and names as BatchNorm2d.
class SyncBatchNorm : public BatchNorm2d {
 public:
  SyncBatchNorm(std::int64_t num_features, Device& device,
                std::shared_ptr<comm::Communicator> comm, BatchNormOptions options = {})
      : BatchNorm2d(num_features, device, options) {
    set_sync_group(parallel::batch_norm_group(std::move(comm)));
  }
};

}  // namespace cohort::nn
