// Trainer::write_report (trainer.hpp): the run's figures as a RunReport (run_report.hpp) at the
// end of fit(), for tools that compare runs (cohort-swap).
#include "cohort/train/run_report.hpp"
#include "cohort/train/trainer.hpp"

namespace cohort::train {

void Trainer::write_report() {
  RunReport r;
  r.backend = comm_ ? comm_->backend() : "none";
  r.world_size = world_size();
  r.steps = timer_.steps();
  r.images_per_s = images_per_s();
  r.step_ms = timer_.step_ms();
  const auto mean = timer_.mean_ms();
  if (const auto it = mean.find("comm"); it != mean.end()) r.comm_ms = it->second;
  if (const auto it = mean.find("overlap"); it != mean.end()) r.overlap_ms = it->second;
  r.final_loss = history_.empty() ? 0.0 : history_.back();
  if (ddp_) {
    r.deterministic = ddp_->options().deterministic;
    r.weights_identical = ddp_->weights_identical_across_ranks();  // collective
    r.digest = ddp_->weights_digest();
  } else {
    r.digest = parallel::weights_digest(model_);
  }
  if (is_lead()) write_run_report(options_.report_path, r);
}

}  // namespace cohort::train
