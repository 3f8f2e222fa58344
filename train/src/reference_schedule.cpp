// reference_lr_scheduler (reference_schedule.hpp): train.py's schedule construction.
#include "cohort/train/reference_schedule.hpp"

#include <cstdio>
#include <vector>

#include "cohort/core/error.hpp"

namespace cohort::train {

std::unique_ptr<optim::Scheduler> reference_lr_scheduler(optim::Optimizer& opt,
                                                         const ReferenceSchedule& s) {
  COHORT_CHECK(s.lr_warmup_epochs >= 0, "--lr-warmup-epochs ", s.lr_warmup_epochs,
               " must be >= 0");
  COHORT_CHECK(s.lr_warmup_epochs == 0 || s.lr_warmup_epochs < s.epochs, "--lr-warmup-epochs ",
               s.lr_warmup_epochs, " leaves nothing of the run's ", s.epochs, " epochs");
  std::unique_ptr<optim::Scheduler> main;
  if (s.lr_scheduler == "steplr") {
    COHORT_CHECK(s.lr_step_size >= 1, "--lr-step-size ", s.lr_step_size, " must be >= 1");
    main = std::make_unique<optim::StepLR>(opt, s.lr_step_size, s.lr_gamma);
  } else if (s.lr_scheduler == "cosineannealinglr") {
    main = std::make_unique<optim::CosineAnnealingLR>(opt, s.epochs - s.lr_warmup_epochs,
                                                      s.lr_min);
  } else if (s.lr_scheduler == "exponentiallr") {
    main = std::make_unique<optim::ExponentialLR>(opt, s.lr_gamma);
  } else {
    COHORT_FAIL("--lr-scheduler '", s.lr_scheduler,
                "' is not one of steplr, cosineannealinglr, exponentiallr");
  }
  if (s.lr_warmup_epochs == 0) return main;
  std::unique_ptr<optim::Scheduler> warmup;
  if (s.lr_warmup_method == "linear") {
    warmup = std::make_unique<optim::LinearLR>(opt, s.lr_warmup_decay, 1.0, s.lr_warmup_epochs);
  } else if (s.lr_warmup_method == "constant") {
    // ConstantLR(factor, total_iters): within the SequentialLR, whose milestone is total_iters,
    // the same lr as a LinearLR from factor to factor.
    warmup = std::make_unique<optim::LinearLR>(opt, s.lr_warmup_decay, s.lr_warmup_decay,
                                               s.lr_warmup_epochs);
  } else {
    COHORT_FAIL("--lr-warmup-method '", s.lr_warmup_method, "' is not one of constant, linear");
  }
  std::vector<std::unique_ptr<optim::Scheduler>> parts;
  parts.push_back(std::move(warmup));
  parts.push_back(std::move(main));
  return std::make_unique<optim::SequentialLR>(opt, std::move(parts),
                                               std::vector<std::int64_t>{s.lr_warmup_epochs});
}

std::string describe(const ReferenceSchedule& s) {
  char b[256];
  if (s.lr_scheduler == "steplr")
    std::snprintf(b, sizeof b, "steplr (step size %lld, gamma %g)",
                  static_cast<long long>(s.lr_step_size), s.lr_gamma);
  else if (s.lr_scheduler == "cosineannealinglr")
    std::snprintf(b, sizeof b, "cosineannealinglr (T_max %lld, lr_min %g)",
                  static_cast<long long>(s.epochs - s.lr_warmup_epochs), s.lr_min);
  else
    std::snprintf(b, sizeof b, "%s (gamma %g)", s.lr_scheduler.c_str(), s.lr_gamma);
  std::string out = b;
  if (s.lr_warmup_epochs > 0) {
    std::snprintf(b, sizeof b, " after %lld %s warm-up epoch%s from %g x lr",
                  static_cast<long long>(s.lr_warmup_epochs), s.lr_warmup_method.c_str(),
                  s.lr_warmup_epochs == 1 ? "" : "s", s.lr_warmup_decay);
    out += b;
  }
  return out + " (per epoch)";
}

}  // namespace cohort::train
