// ascii_plot (see ascii_plot.hpp): the values bucketed into at most `width` columns (each the mean
// of its bucket), non-finite values skipped, drawn on a grid with labelled top, middle and bottom.
#include "cohort/train/ascii_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cohort::train {

std::string ascii_plot(const std::vector<double>& values, const std::string& title, int width,
                       int height) {
  width = std::max(width, 8);
  height = std::max(height, 3);
  std::vector<double> finite;
  for (double v : values)
    if (std::isfinite(v)) finite.push_back(v);
  std::string out = title + "\n";
  if (finite.empty()) return out + "(no data)\n";

  // Bucket into at most `width` columns, each the mean of its bucket.
  const std::size_t n = finite.size();
  const std::size_t cols = std::min<std::size_t>(n, static_cast<std::size_t>(width));
  std::vector<double> col(cols);
  for (std::size_t c = 0; c < cols; ++c) {
    const std::size_t b = c * n / cols, e = std::max(b + 1, (c + 1) * n / cols);
    double s = 0;
    for (std::size_t i = b; i < e; ++i) s += finite[i];
    col[c] = s / static_cast<double>(e - b);
  }
  double lo = *std::min_element(col.begin(), col.end());
  double hi = *std::max_element(col.begin(), col.end());
  if (hi - lo < 1e-12) {
    hi += 0.5;
    lo -= 0.5;
  }
  std::vector<std::string> grid(static_cast<std::size_t>(height), std::string(cols, ' '));
  for (std::size_t c = 0; c < cols; ++c) {
    const int row = static_cast<int>(std::lround((hi - col[c]) / (hi - lo) * (height - 1)));
    grid[static_cast<std::size_t>(row)][c] = '*';
  }
  char label[32];
  for (int r = 0; r < height; ++r) {
    const double y = hi - (hi - lo) * r / (height - 1);
    if (r == 0 || r == height - 1 || r == (height - 1) / 2)
      std::snprintf(label, sizeof label, "%10.4g |", y);
    else
      std::snprintf(label, sizeof label, "%10s |", "");
    out += label + grid[static_cast<std::size_t>(r)] + "\n";
  }
  out += std::string(11, ' ') + "+" + std::string(cols, '-') + "\n";
  std::snprintf(label, sizeof label, "%zu", n);
  const std::string right = label;
  std::string axis = std::string(12, ' ') + "1";
  const std::size_t end_col = 12 + cols;
  if (end_col > axis.size() + right.size())
    axis += std::string(end_col - axis.size() - right.size(), ' ');
  out += axis + right + "\n";
  return out;
}

}  // namespace cohort::train
