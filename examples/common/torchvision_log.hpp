// classify's output in the words of torchvision's references/classification/train.py, so a log
// read by eye or by a script written for train.py reads the same: its MetricLogger progress line
// ("Epoch: [0]  [10/31]  eta: 0:00:07  lr: 0.02  img/s: 85.1  loss: 2.2912 (2.3011)  time: 0.37"),
// the epoch's "Total time", the evaluation's "Test:  Acc@1 21.600 Acc@5 73.600" (and "Test: EMA
// ..."), and "Training time". Epochs are counted from 0 as there. What train.py prints and this
// does not: the training batches' acc1/acc5 (the Trainer does not hand the outputs out) and the
// per-batch data time. On a GPU the Trainer reads losses back only at its log points (every
// print_freq steps, at steps print_freq - 1, 2 print_freq - 1, ...), so a line at step 0 of a
// print_freq window shows the losses read back by then, one step behind. Lead rank only (the
// caller checks). Header-only, the examples' own code.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cohort/train/trainer.hpp"

namespace examples {

class TorchvisionLog {
 public:
  using clock = std::chrono::steady_clock;
  // steps_per_epoch: this rank's optimizer steps per epoch; batch: this rank's batch size (img/s
  // is per rank, as train.py's); print_freq: --print-freq.
  TorchvisionLog(std::int64_t steps_per_epoch, std::int64_t batch, std::int64_t print_freq)
      : per_epoch_(std::max<std::int64_t>(1, steps_per_epoch)), batch_(batch),
        freq_(std::max<std::int64_t>(1, print_freq)) {}

  // "0:01:05", Python's str(datetime.timedelta(seconds=int(s))) for s < 1 day.
  static std::string hms(double seconds) {
    const long long s = static_cast<long long>(seconds);
    char b[32];
    std::snprintf(b, sizeof b, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    return b;
  }

  void start_run() { run_start_ = clock::now(); }
  void start_epoch() { epoch_start_ = last_ = clock::now(); }

  // After optimizer step `global_step` (1-based, the Trainer's count): the progress line at steps
  // 0, print_freq, 2 print_freq, ... of the epoch and its last; then, after the last, the epoch's
  // total time. `losses` is the Trainer's loss history (the window median over 20 steps and the
  // epoch's mean, as SmoothedValue's "{median:.4f} ({global_avg:.4f})").
  void step(std::int64_t global_step, double lr, const std::vector<double>& losses) {
    const auto now = clock::now();
    const double dt = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    const std::int64_t i = (global_step - 1) % per_epoch_, epoch = (global_step - 1) / per_epoch_;
    if (i == 0) step_times_.clear();
    step_times_.push_back(dt);
    if (i % freq_ != 0 && i != per_epoch_ - 1) return;
    const std::size_t n = losses.size();
    const std::size_t in_epoch = std::min<std::size_t>(n, static_cast<std::size_t>(i + 1));
    std::vector<double> window(losses.end() - std::min<std::size_t>(in_epoch, 20), losses.end());
    std::sort(window.begin(), window.end());
    const double median = window.empty() ? 0 : window[(window.size() - 1) / 2];  // torch.median
    const double mean =
        in_epoch == 0 ? 0 : std::accumulate(losses.end() - in_epoch, losses.end(), 0.0) / in_epoch;
    // time: SmoothedValue's avg, over the last 20 steps; eta: its global_avg, over the epoch.
    const std::size_t w = std::min<std::size_t>(step_times_.size(), 20);
    const double avg = std::accumulate(step_times_.end() - w, step_times_.end(), 0.0) / w;
    const double global_avg =
        std::accumulate(step_times_.begin(), step_times_.end(), 0.0) / step_times_.size();
    const int width = static_cast<int>(std::to_string(per_epoch_).size());
    std::printf("Epoch: [%lld]  [%*lld/%lld]  eta: %s  lr: %.10g  img/s: %.4f  loss: %.4f (%.4f)  "
                "time: %.4f\n",
                static_cast<long long>(epoch), width, static_cast<long long>(i),
                static_cast<long long>(per_epoch_), hms(global_avg * (per_epoch_ - i)).c_str(), lr,
                dt > 0 ? batch_ / dt : 0.0, median, mean, avg);
    if (i == per_epoch_ - 1)
      std::printf("Epoch: [%lld] Total time: %s\n", static_cast<long long>(epoch),
                  hms(std::chrono::duration<double>(now - epoch_start_).count()).c_str());
    std::fflush(stdout);
  }

  // evaluate()'s closing line: suffix "" (the model) or "EMA".
  static void test(const cohort::train::EvalResult& r, const std::string& suffix) {
    std::printf("Test: %s Acc@1 %.3f Acc@5 %.3f\n", suffix.c_str(), 100.0 * r.accuracy,
                100.0 * r.accuracy5);
    std::fflush(stdout);
  }

  void end_run() const {
    std::printf("Training time %s\n",
                hms(std::chrono::duration<double>(clock::now() - run_start_).count()).c_str());
  }

 private:
  std::int64_t per_epoch_, batch_, freq_;
  clock::time_point run_start_ = clock::now(), epoch_start_ = clock::now(), last_ = clock::now();
  std::vector<double> step_times_;
};

}  // namespace examples
