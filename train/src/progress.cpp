// ProgressBar (see progress.hpp): one redrawn line on a terminal, a plain line per log interval
// otherwise, with the ETA from the epoch's elapsed time.
#include "cohort/train/progress.hpp"

#include <unistd.h>

#include <cmath>

namespace cohort::train {

ProgressBar::ProgressBar(std::FILE* out, std::int64_t log_interval, int tty)
    : out_(out), interval_(log_interval < 1 ? 1 : log_interval), phase_interval_(interval_),
      tty_(tty < 0 ? ::isatty(::fileno(out)) != 0 : tty != 0) {}

void ProgressBar::start_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t steps,
                              std::int64_t first_step) {
  first_ = first_step;
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
  phase_interval_ = interval_;
  label_ = "epoch " + std::to_string(epoch) + "/" + std::to_string(epochs);
  start_ = std::chrono::steady_clock::now();
  drawn_ = false;
}

void ProgressBar::start_eval(std::int64_t batches, std::int64_t interval, const std::string& label) {
  steps_ = batches;
  first_ = 0;
  phase_interval_ = interval < 1 ? 1 : interval;
  label_ = label;
  start_ = std::chrono::steady_clock::now();
  drawn_ = false;
}

std::string ProgressBar::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", s / 60, s % 60);
  return buf;
}

void ProgressBar::update(std::int64_t step, double loss, double images_per_s,
                         const std::string& extra) {
  const std::string more = extra.empty() ? "" : " " + extra;
  const std::int64_t done = step + 1;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::int64_t run = done - first_;  // steps this process has run (a resume skips some)
  const double eta =
      run > 0 ? elapsed / static_cast<double>(run) * static_cast<double>(steps_ - done) : -1;
  if (tty_) {
    const int width = 24;
    const int filled = steps_ > 0 ? static_cast<int>(width * done / steps_) : 0;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar += std::string(static_cast<std::size_t>(width - filled), '.');
    std::fprintf(out_, "\r%s [%s] %lld/%lld loss %.4f%s %.0f img/s ETA %s\033[K", label_.c_str(),
                 bar.c_str(), static_cast<long long>(done), static_cast<long long>(steps_), loss,
                 more.c_str(), images_per_s, format_duration(eta).c_str());
    drawn_ = true;
  } else if (done % phase_interval_ == 0 || done == steps_) {
    std::fprintf(out_, "%s step %lld/%lld (%3.0f%%) loss %.4f%s %.0f img/s ETA %s\n",
                 label_.c_str(), static_cast<long long>(done), static_cast<long long>(steps_),
                 steps_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(steps_) : 0.0,
                 loss, more.c_str(), images_per_s, format_duration(eta).c_str());
  }
  std::fflush(out_);
}

void ProgressBar::note(const std::string& line) {
  std::fprintf(out_, tty_ && drawn_ ? "\r%s\033[K\n" : "%s\n", line.c_str());
  drawn_ = false;
  std::fflush(out_);
}

void ProgressBar::end_epoch() {
  if (tty_ && drawn_) std::fprintf(out_, "\n");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace cohort::train
