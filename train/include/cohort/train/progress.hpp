// A training and evaluation progress display: on a terminal, one line redrawn in place with a bar,
// step, epoch (or "evaluate"), loss, images/s and ETA; when stdout is not a terminal (CI, files, pipes), a plain line every
// `log_interval` steps, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace cohort::train {

class ProgressBar {
 public:
  // `out` is usually stdout; `tty` < 0 means "ask isatty(out)".
  ProgressBar(std::FILE* out, std::int64_t log_interval, int tty = -1);

  // Starts an epoch of `steps` steps (for the bar and the ETA); a resumed epoch starts at
  // `first_step` (the ETA counts only the steps run since).
  void start_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t steps,
                   std::int64_t first_step = 0);
  // Starts an evaluation pass of `batches` batches, a line every `interval` batches off a terminal.
  void start_eval(std::int64_t batches, std::int64_t interval,
                  const std::string& label = "evaluate");
  // Reports step `step` (0-based) of the epoch or evaluation; `extra` follows the loss ("acc
  // 91.20%").
  void update(std::int64_t step, double loss, double images_per_s, const std::string& extra = "");
  // A line of its own between updates ("checkpoint: ..."); on a terminal the bar is redrawn by
  // the next update.
  void note(const std::string& line);
  // Ends the epoch's line (terminal) so following output starts on a fresh line.
  void end_epoch();

  // "01:02:03" / "02:03"
  static std::string format_duration(double seconds);
  bool is_tty() const { return tty_; }

 private:
  std::FILE* out_;
  std::int64_t interval_, phase_interval_;
  bool tty_;
  std::string label_;  // "epoch 2/10" or "evaluate"
  std::int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, first_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
};

}  // namespace cohort::train
