// Metrics as JSON Lines: one JSON object per line, appended and flushed as training runs, so a
// crashed run still leaves every line it logged. tools/plot_metrics.py turns files into PNGs.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cohort::train {

class MetricsWriter {
 public:
  MetricsWriter() = default;  // disabled: write() does nothing
  explicit MetricsWriter(const std::string& path);  // truncates; throws naming the path
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  MetricsWriter(MetricsWriter&& o) noexcept;
  MetricsWriter& operator=(MetricsWriter&& o) noexcept;

  bool enabled() const { return file_ != nullptr; }
  // Writes {"kind": kind, k1: v1, ...} (numbers) plus nested number maps under their names.
  void write(const std::string& kind, const std::vector<std::pair<std::string, double>>& values,
             const std::map<std::string, std::map<std::string, double>>& groups = {});

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace cohort::train

namespace cohort::train {
// Joins per-rank Chrome trace files (each from cohort::trace::write_chrome_trace, process id =
// rank) into one file, so every rank's tracks appear side by side; writes atomically and removes
// the inputs when remove_inputs is set. Throws naming the file that cannot be read.
void merge_chrome_traces(const std::vector<std::string>& inputs, const std::string& output,
                         bool remove_inputs = true);
}  // namespace cohort::train
