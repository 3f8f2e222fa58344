// Reference of the reductions: row sums, maxima and argmaxima of a [rows, cols] matrix, and the
// bias gradient (a sum over every axis but the channel). Sums accumulate in double and round to
// f32 once; max and argmax follow torch.max / torch.argmax (NaN wins, the first maximum's index).
#include <cmath>

#include "reference.hpp"

namespace parity_ref {

Vec sum_last(const Vec& x, std::size_t rows, std::size_t cols) {
  Vec out(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::size_t c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = f32(s);
  }
  return out;
}

Vec argmax_last(const Vec& x, std::size_t rows, std::size_t cols) {
  Vec out(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t best = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = x[r * cols + c], b = x[r * cols + best];
      if (std::isnan(b)) break;  // the first NaN is the answer
      if (std::isnan(v) || v > b) best = c;
    }
    out[r] = static_cast<double>(best);
  }
  return out;
}

Vec max_last(const Vec& x, std::size_t rows, std::size_t cols) {
  const Vec idx = argmax_last(x, rows, cols);
  Vec out(rows);
  for (std::size_t r = 0; r < rows; ++r) out[r] = x[r * cols + static_cast<std::size_t>(idx[r])];
  return out;
}

Vec bias_grad(const Vec& dy, std::int64_t outer, std::int64_t channels, std::int64_t inner,
              const Vec& dbias0) {
  Vec out(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    double s = 0;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) s += dy[(o * channels + c) * inner + i];
    out[c] = dbias0[c] + s;
  }
  return out;
}

}  // namespace parity_ref
