// A training progress display: on a terminal, one line redrawn in place with a bar, step, epoch,
// loss, images/s and ETA; when stdout is not a terminal (CI, files, pipes), a plain line every
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

  // Starts an epoch of `steps` steps (for the bar and the ETA).
  void start_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t steps);
  // Reports step `step` (0-based) of the epoch.
  void update(std::int64_t step, double loss, double images_per_s);
  // Ends the epoch's line (terminal) so following output starts on a fresh line.
  void end_epoch();

  // "01:02:03" / "02:03"
  static std::string format_duration(double seconds);
  bool is_tty() const { return tty_; }

 private:
  std::FILE* out_;
  std::int64_t interval_;
  bool tty_;
  std::int64_t epoch_ = 0, epochs_ = 0, steps_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
};

}  // namespace cohort::train
