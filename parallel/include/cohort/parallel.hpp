// Everything a data-parallel program needs besides the model: the process group
// (comm::init_process_group, the Communicator), DistributedDataParallel, and the Horovod-style
// helpers (broadcast_parameters, average_gradients, DistributedOptimizer), and elastic groups
// (ElasticGroup), and ZeRO stage 1 (make_zero_optimizer).
#pragma once

#include "cohort/collectives/communicator.hpp"
#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/registry.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/sync_batchnorm.hpp"
#include "cohort/parallel/elastic.hpp"
#include "cohort/parallel/horovod.hpp"
#include "cohort/parallel/zero.hpp"
