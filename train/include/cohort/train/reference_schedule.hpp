// The learning-rate schedule of torchvision's reference script by its flags' names, stepped once
// per epoch as there: the main schedule (--lr-scheduler steplr: StepLR(--lr-step-size,
// --lr-gamma); cosineannealinglr: CosineAnnealingLR(T_max = epochs - warm-up epochs,
// eta_min = --lr-min); exponentiallr: ExponentialLR(--lr-gamma)), after --lr-warmup-epochs of
// warm-up (--lr-warmup-method linear: LinearLR from --lr-warmup-decay to 1; constant: the lr
// times --lr-warmup-decay) joined by SequentialLR at the warm-up's end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cohort/optim/lr_scheduler.hpp"

namespace cohort::train {

struct ReferenceSchedule {
  std::string lr_scheduler = "steplr";  // steplr | cosineannealinglr | exponentiallr
  std::int64_t lr_step_size = 30;
  double lr_gamma = 0.1;
  double lr_min = 0.0;
  std::int64_t epochs = 90;
  std::int64_t lr_warmup_epochs = 0;
  std::string lr_warmup_method = "constant";  // constant | linear
  double lr_warmup_decay = 0.01;
};

// Errors name the flag: an unknown scheduler or warm-up method, a warm-up of at least the run's
// epochs, a step size below 1.
std::unique_ptr<optim::Scheduler> reference_lr_scheduler(optim::Optimizer& optimizer,
                                                         const ReferenceSchedule& s);
// "cosineannealinglr (T_max 85, lr_min 0) after 5 linear warm-up epochs from 0.01 x lr"
std::string describe(const ReferenceSchedule& s);

}  // namespace cohort::train
