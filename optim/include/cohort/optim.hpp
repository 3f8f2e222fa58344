// Everything of cohort::optim: the optimizers (SGD, Adam, AdamW, Adadelta, RMSprop) and the
// learning-rate schedulers (StepLR, ExponentialLR, CosineAnnealingLR, LinearLR, OneCycleLR).
// docs/OPTIM.md is the guide.
#pragma once

#include "cohort/optim/adadelta.hpp"
#include "cohort/optim/adam.hpp"
#include "cohort/optim/grad_scaler.hpp"
#include "cohort/optim/lr_scheduler.hpp"
#include "cohort/optim/optimizer.hpp"
#include "cohort/optim/rmsprop.hpp"
#include "cohort/optim/sgd.hpp"
