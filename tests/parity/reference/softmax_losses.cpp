// Reference of softmax, log-softmax and the class-index losses. Softmax subtracts the channel's
// maximum before exp (the value is the same; only overflow is avoided) and sums in double; the
// gradients are the Jacobian-vector products written out: softmax dx = y (dy - sum dy y),
// log-softmax dx = dy - softmax(x) sum dy.
#include <algorithm>
#include <cmath>

#include "reference.hpp"

namespace parity_ref {

Vec softmax_forward(bool log, const Vec& x, std::int64_t outer, std::int64_t channels,
                    std::int64_t inner) {
  Vec y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t c) { return (o * channels + c) * inner + i; };
      double mx = -INFINITY, sum = 0;
      for (std::int64_t c = 0; c < channels; ++c) mx = std::max(mx, x[at(c)]);
      for (std::int64_t c = 0; c < channels; ++c) sum += std::exp(x[at(c)] - mx);
      for (std::int64_t c = 0; c < channels; ++c)
        y[at(c)] = log ? x[at(c)] - mx - std::log(sum) : std::exp(x[at(c)] - mx) / sum;
    }
  return y;
}

Vec softmax_backward(bool log, const Vec& x, const Vec& dy, std::int64_t outer,
                     std::int64_t channels, std::int64_t inner) {
  const Vec p = softmax_forward(false, x, outer, channels, inner);
  Vec dx(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t c) { return (o * channels + c) * inner + i; };
      double s = 0;
      for (std::int64_t c = 0; c < channels; ++c) s += log ? dy[at(c)] : dy[at(c)] * p[at(c)];
      for (std::int64_t c = 0; c < channels; ++c)
        dx[at(c)] = log ? dy[at(c)] - p[at(c)] * s : p[at(c)] * (dy[at(c)] - s);
    }
  return dx;
}

Vec nll_forward(const Vec& logp, const std::vector<std::int64_t>& target, std::int64_t classes) {
  Vec loss(target.size());
  for (std::size_t r = 0; r < target.size(); ++r) loss[r] = -logp[r * classes + target[r]];
  return loss;
}

Vec nll_backward(const std::vector<std::int64_t>& target, std::int64_t classes, double scale) {
  Vec dx(target.size() * classes, 0.0);
  for (std::size_t r = 0; r < target.size(); ++r) dx[r * classes + target[r]] = -scale;
  return dx;
}

Vec cross_entropy_backward(const Vec& logits, const std::vector<std::int64_t>& target,
                           std::int64_t classes, double scale, double smoothing) {
  const std::int64_t rows = static_cast<std::int64_t>(target.size());
  Vec dx = softmax_forward(false, logits, rows, classes, 1);
  // The smoothed target distribution: 1 - smoothing + smoothing / C at the class, smoothing / C
  // elsewhere.
  const double off = smoothing / static_cast<double>(classes);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < classes; ++c)
      dx[r * classes + c] =
          scale * (dx[r * classes + c] - (c == target[r] ? 1.0 - smoothing + off : off));
  }
  return dx;
}

}  // namespace parity_ref
