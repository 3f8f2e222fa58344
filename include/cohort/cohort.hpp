// All of cohort in one include: tensors and devices, layers and losses, optimizers and
// schedulers, data, the Trainer and checkpoints, and data parallelism. Link cohort::cohort.
#pragma once

#include "cohort/core/autocast.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/data.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/models.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel.hpp"
#include "cohort/train.hpp"
