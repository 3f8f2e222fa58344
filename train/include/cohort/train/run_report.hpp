// One training run's figures as one flat JSON object, for tools that compare runs: cohort-swap
// runs a program over communicator backends and rank counts and reads one report per run. The
// Trainer writes it at the end of fit() when TrainerOptions::report_path (or COHORT_RUN_REPORT)
// is set; a hand-written loop fills a RunReport and calls write_run_report itself.
#pragma once

#include <cstdint>
#include <string>

namespace cohort::train {

struct RunReport {
  std::string backend = "none";  // the communicator's backend(); "none" without one
  int world_size = 1;
  std::int64_t steps = 0;        // optimizer steps this run took (a resumed run: its own part)
  double images_per_s = 0;       // all ranks' training samples / training wall time
  double step_ms = 0;            // mean ms per optimizer step (data, forward, backward, optimizer)
  double comm_ms = 0;            // of which waiting for gradient collectives (DDP comm_wait_s)
  double overlap_ms = 0;         // collective time hidden under the backward (DDP overlap_s)
  double final_loss = 0;         // the last optimizer step's loss (not the epoch's mean)
  bool deterministic = false;    // DDP's deterministic mode (fixed reduction order)
  std::string digest;            // parallel::weights_digest of the trained model (hex)
  bool weights_identical = true; // every rank ended with the same weights (checked collectively)
};

// Writes `r` to `path` atomically (a temporary file renamed over it). Throws naming the path.
void write_run_report(const std::string& path, const RunReport& r);
// Throws naming `path` when write_run_report could not write there (its directory is missing or
// not writable); leaves nothing behind.
void check_run_report_path(const std::string& path);
// Reads a report write_run_report wrote; throws naming the path and the key for a missing file,
// a missing or mistyped key, or text that is not one flat JSON object.
RunReport read_run_report(const std::string& path);

}  // namespace cohort::train
