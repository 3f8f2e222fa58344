// Reference of the element-wise activations, their gradients and the fused bias add, from the
// textbook definitions (gelu is the exact erf form, as torch.nn.GELU's default). The gradient is
// taken at x in closed form; the device's backward reads y for relu, sigmoid and tanh, which
// says the same thing (relu: y > 0 iff x > 0; sigmoid' = y (1 - y); tanh' = 1 - y^2).
#include <cmath>

#include "reference.hpp"

namespace parity_ref {

double activate(Act f, double alpha, double x) {
  switch (f) {
    case Act::identity:
      return x;
    case Act::relu:  // NaN passes through, as torch.relu
      return x > 0 || std::isnan(x) ? x : 0.0;
    case Act::leaky_relu:
      return x > 0 ? x : alpha * x;
    case Act::gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Act::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Act::tanh:
      return std::tanh(x);
  }
  return x;
}

double activate_grad(Act f, double alpha, double x) {
  switch (f) {
    case Act::identity:
      return 1.0;
    case Act::relu:
      return x > 0 ? 1.0 : 0.0;  // 0 at x == 0, as torch's threshold_backward
    case Act::leaky_relu:
      return x > 0 ? 1.0 : alpha;
    case Act::gelu: {
      const double pi = 3.14159265358979323846;
      const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * pi);
      return cdf + x * pdf;
    }
    case Act::sigmoid: {
      const double s = 1.0 / (1.0 + std::exp(-x));
      return s * (1.0 - s);
    }
    case Act::tanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
  }
  return 1.0;
}

Vec activation_forward(Act f, double alpha, const Vec& x) {
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = activate(f, alpha, x[i]);
  return y;
}

Vec activation_backward(Act f, double alpha, const Vec& x, const Vec& dy) {
  Vec dx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dx[i] = dy[i] * activate_grad(f, alpha, x[i]);
  return dx;
}

Vec bias_add(const Vec& y0, const Vec& bias, std::int64_t outer, std::int64_t channels,
             std::int64_t inner, Act f, double alpha) {
  Vec y(y0.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t at = (o * channels + c) * inner + i;
        y[at] = activate(f, alpha, f32(y0[at] + bias[c]));  // the sum is one f32 addition
      }
  return y;
}

}  // namespace parity_ref
